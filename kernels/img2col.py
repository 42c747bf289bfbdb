"""`img2col_kernel`, conv2d's first step (kernels/conv2d.py): col (C*KH*KW + 1 rows of OH*OW, the
last all ones) from one NCHW image, a GM workspace the cube's matmul reads. Each core owns a
block of (c, ki) row groups. With stride 1 along W (any stride along H, any dilation, any
padding) a col row is, per output row, a run of consecutive input values shifted by kj*dw - pw:
pure data movement, so the kernel moves many output rows at once with one strided GM -> UB
`data_copy_pad` (the runs, each landing 32-byte aligned in UB) and one strided UB -> GM copy
(into place, ow apart), plus copies of a zero buffer for the padding columns and rows. For small
images it batches channels instead (`_channel_rows_shifted`: one copy per tap and output row for
many channels, h*w apart in x), whichever needs fewer copies. With stride > 1 along W, an input
row moves GM -> UB as one-element blocks (each lands in its own 32-byte UB block, as
data_copy_pad places blocks; zero blocks stand for the padding), and per tap one WholeReduceMax
over lane 0 of every sw-th block picks the strided elements into a dense UB row (a one-lane max
is the element itself), several output rows of a tap then leaving UB -> GM in one copy
(`_group_rows_sparse`, no scalar S-pipe loop). Rows too wide for that UB layout fall back to a GM
-> UB copy of one-element blocks sw apart and a UB -> GM copy writing them back to back
(`_group_rows_strided`).
"""
from __future__ import annotations

from typing import NamedTuple

import ascendc as asc

BUFFER_NUM = 2
SPARSE_REPEATS = 248  # WholeReduce repeats per call (<= 255, a multiple of 8: aligned dst)


class Img2colGeometry(NamedTuple):
    """One image's convolution geometry, as img2col_kernel and its helpers get it (`g`)."""
    c: int      # input channels, rows, columns
    h: int
    w: int
    oh: int     # output rows, columns
    ow: int
    kh: int     # kernel rows, columns
    kw: int
    sh: int     # stride along H, W
    sw: int
    ph: int     # top and left padding
    pw: int
    dh: int     # dilation along H, W
    dw: int


class Img2colSplit(NamedTuple):
    """How img2col_kernel's work is split over cores and batched into copies."""
    groups_per_core: int    # (c, ki) row groups per core (channels when ch_per_copy > 0)
    rows_per_copy: int      # output rows moved by one strided copy
    rows_per_pass: int      # output rows per pass of the sparse strided path (0: not used)
    ch_per_copy: int        # channels per copy for small images (0: split by row groups)


@asc.jit
def _valid_rows(g, ki):
    """(r_lo, r_hi): the output rows whose input row for kernel row ki is inside the image (the
    rest read the padding)."""
    a = g.ph - ki * g.dh
    r_lo = min(g.oh, 0 if a <= 0 else (a + g.sh - 1) // g.sh)
    b = g.h - 1 + g.ph - ki * g.dh
    r_hi = max(r_lo, min(g.oh, 0 if b < 0 else b // g.sh + 1))
    return (r_lo, r_hi)


@asc.jit
def _fill_run(colg, zb, off, n, zlen):
    """colg[off:off+n] = the constant in the UB buffer zb (zlen elements), in pieces (MTE3)."""
    for s in range(0, n, zlen):
        cnt = min(zlen, n - s)
        asc.data_copy_pad(colg[off + s:], zb,
                          asc.DataCopyExtParams(1, cnt * colg.dtype.sizeof(), 0, 0, 0))


@asc.jit
def _pad_rows(colg, zb, g, ci, ki, buf):
    """Zero the output rows of group (ci, ki)'s KW col rows whose input row is in the padding."""
    p = g.oh * g.ow
    r_lo, r_hi = _valid_rows(g, ki)
    for kj in range(g.kw):
        base = ((ci * g.kh + ki) * g.kw + kj) * p
        _fill_run(colg, zb, base, r_lo * g.ow, buf)
        _fill_run(colg, zb, base + r_hi * g.ow, (g.oh - r_hi) * g.ow, buf)


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
def _group_rows_shifted(qx, xg, colg, zb, g, ci, ki, rows_per_copy, buf):
    """The KW col rows of one (c, ki) group, stride-1 columns: per kj the valid output rows
    [r_lo, r_hi) read input rows sh apart, shifted by kj*dw - pw (pure data movement)."""
    p = g.oh * g.ow
    r_lo, r_hi = _valid_rows(g, ki)
    _pad_rows(colg, zb, g, ci, ki, buf)
    for kj in range(g.kw):
        base = ((ci * g.kh + ki) * g.kw + kj) * p
        off = kj * g.dw - g.pw
        q_lo = min(g.ow, max(0, -off))
        q_hi = max(q_lo, min(g.ow, g.w - off))
        for r0 in range(r_lo, r_hi, rows_per_copy):
            nr = min(rows_per_copy, r_hi - r0)
            ih0 = r0 * g.sh - g.ph + ki * g.dh
            _shifted_rows(qx, xg, colg, zb, (ci * g.h + ih0) * g.w + off + q_lo,
                          base + r0 * g.ow, nr, q_hi - q_lo, q_lo, g.ow - q_hi, g.sh * g.w, g.ow)


@asc.jit
def _channel_rows_shifted(qx, xg, colg, zb, g, c0, nc, ch_per_copy):
    """Channels [c0, c0+nc), stride-1 columns, for small images: per tap (ki, kj) and output
    row, one strided copy moves that row's run for up to ch_per_copy channels (h*w apart in x,
    kh*kw*oh*ow apart in col); the padding as copies of the zero buffer, batched the same way."""
    p = g.oh * g.ow
    kkp = g.kh * g.kw * p
    for ki in range(g.kh):
        r_lo, r_hi = _valid_rows(g, ki)
        for kj in range(g.kw):
            off = kj * g.dw - g.pw
            q_lo = min(g.ow, max(0, -off))
            q_hi = max(q_lo, min(g.ow, g.w - off))
            for cb in range(c0, c0 + nc, ch_per_copy):
                ncc = min(ch_per_copy, c0 + nc - cb)
                base = ((cb * g.kh + ki) * g.kw + kj) * p
                if r_lo > 0:
                    _shifted_rows(qx, xg, colg, zb, 0, base, ncc, 0, r_lo * g.ow, 0, 0, kkp)
                if r_hi < g.oh:
                    _shifted_rows(qx, xg, colg, zb, 0, base + r_hi * g.ow, ncc, 0,
                                  (g.oh - r_hi) * g.ow, 0, 0, kkp)
                for r in range(r_lo, r_hi):
                    ih = r * g.sh - g.ph + ki * g.dh
                    _shifted_rows(qx, xg, colg, zb, (cb * g.h + ih) * g.w + off + q_lo,
                                  base + r * g.ow, ncc, q_hi - q_lo, q_lo, g.ow - q_hi, g.h * g.w,
                                  kkp)


@asc.jit
def _group_rows_strided(qx, xg, colg, zb, g, ci, ki, rows_per_copy, buf):
    """The KW col rows of one (c, ki) group, stride sw > 1 along W: per output row and kj, one
    GM -> UB copy of one-element blocks sw apart (each lands in its own 32-byte UB row) and one
    UB -> GM copy of those blocks back to back; zero columns/rows as in the stride-1 case."""
    p = g.oh * g.ow
    sz = colg.dtype.sizeof()
    per_copy = buf * sz // 32           # one-element blocks that fit the UB buffer
    r_lo, r_hi = _valid_rows(g, ki)
    _pad_rows(colg, zb, g, ci, ki, buf)
    for kj in range(g.kw):
        base = ((ci * g.kh + ki) * g.kw + kj) * p
        off = kj * g.dw - g.pw
        q_lo = min(g.ow, 0 if off >= 0 else (g.sw - 1 - off) // g.sw)
        e = g.w - 1 - off
        q_hi = max(q_lo, min(g.ow, 0 if e < 0 else e // g.sw + 1))
        for r0 in range(r_lo, r_hi, rows_per_copy):
            nr = min(rows_per_copy, r_hi - r0)
            # zero columns only (nq = 0): [0, q_lo) and [q_hi, ow) of each row
            _shifted_rows(qx, xg, colg, zb, 0, base + r0 * g.ow, nr, 0, q_lo, 0, 0, g.ow)
            _shifted_rows(qx, xg, colg, zb, 0, base + r0 * g.ow + q_hi, nr, 0, g.ow - q_hi, 0, 0,
                          g.ow)
        for r in range(r_lo, r_hi):
            ih = r * g.sh - g.ph + ki * g.dh
            for q0 in range(q_lo, q_hi, per_copy):
                nq = min(per_copy, q_hi - q0)
                xl = qx.alloc_tensor(colg.dtype)
                asc.data_copy_pad(xl, xg[(ci * g.h + ih) * g.w + off + q0 * g.sw:],
                                  asc.DataCopyExtParams(nq, sz, (g.sw - 1) * sz, 0, 0))
                qx.enque(xl)
                xl = qx.deque(colg.dtype)
                asc.set_flag(asc.HardEvent.MTE2_MTE3, 0)
                asc.wait_flag(asc.HardEvent.MTE2_MTE3, 0)
                asc.data_copy_pad(colg[base + r * g.ow + q0:], xl,
                                  asc.DataCopyExtParams(nq, sz, 0, 0, 0))
                asc.set_flag(asc.HardEvent.MTE3_MTE2, 0)
                asc.wait_flag(asc.HardEvent.MTE3_MTE2, 0)
                qx.free_tensor(xl)


@asc.jit
def _group_rows_sparse(spb, dnb, xg, colg, g, ci, ki, rows_per_pass, ow32):
    """The KW col rows of one (c, ki) group, stride sw > 1 along W, on the vector unit: an input
    row moves GM -> UB as one-element blocks (each in its own 32-byte block of spb, after pw
    zero blocks: the padded row, one element per block), then per kj one WholeReduceMax of lane
    0 with a source repeat stride of sw blocks picks x[q*sw + kj*dw] for every q into a dense
    row of dnb (a one-lane max is the value itself, bit for bit); rows_per_pass output rows per
    kj leave UB -> GM in one copy."""
    p = g.oh * g.ow
    sz = colg.dtype.sizeof()
    kb = 32 // sz
    r_lo, r_hi = _valid_rows(g, ki)
    for r0 in range(r_lo, r_hi, rows_per_pass):
        nr = min(rows_per_pass, r_hi - r0)
        for i in range(nr):
            ih = (r0 + i) * g.sh - g.ph + ki * g.dh
            asc.set_flag(asc.HardEvent.V_MTE2, 0)       # the previous row's reads are done
            asc.wait_flag(asc.HardEvent.V_MTE2, 0)
            asc.data_copy_pad(spb[g.pw * kb:], xg[(ci * g.h + ih) * g.w:],
                              asc.DataCopyExtParams(g.w, sz, 0, 0, 0))
            asc.set_flag(asc.HardEvent.MTE2_V, 0)
            asc.wait_flag(asc.HardEvent.MTE2_V, 0)
            for kj in range(g.kw):
                for q0 in range(0, g.ow, SPARSE_REPEATS):
                    nq = min(SPARSE_REPEATS, g.ow - q0)
                    asc.whole_reduce_max(dnb[(kj * rows_per_pass + i) * ow32 + q0:],
                                         spb[(q0 * g.sw + kj * g.dw) * kb:], 1, nq, 1, 1, g.sw,
                                         asc.ReduceOrder.ORDER_ONLY_VALUE)
        asc.set_flag(asc.HardEvent.V_MTE3, 0)
        asc.wait_flag(asc.HardEvent.V_MTE3, 0)
        for kj in range(g.kw):
            asc.data_copy_pad(colg[((ci * g.kh + ki) * g.kw + kj) * p + r0 * g.ow:],
                              dnb[kj * rows_per_pass * ow32:],
                              asc.DataCopyExtParams(nr, g.ow * sz, 0, 0, 0))
        asc.set_flag(asc.HardEvent.MTE3_V, 0)           # dnb is rewritten by the next pass
        asc.wait_flag(asc.HardEvent.MTE3_V, 0)


@asc.jit
def img2col_kernel(x: asc.GlobalAddress, col: asc.GlobalAddress, geo: Img2colGeometry,
                   split: Img2colSplit, buf: asc.ConstExpr[int]):
    """col (C*KH*KW + 1 rows of OH*OW) from one NCHW image x (C x H x W); each core owns
    split.groups_per_core (c, ki) row groups, or channels when split.ch_per_copy > 0."""
    p = geo.oh * geo.ow
    bidx = asc.get_block_idx()
    g0 = bidx * split.groups_per_core
    ng = min(split.groups_per_core, geo.c * geo.kh - g0)
    xg = asc.GlobalTensor()
    xg.set_global_buffer(x, geo.c * geo.h * geo.w)
    colg = asc.GlobalTensor()
    colg.set_global_buffer(col, (geo.c * geo.kh * geo.kw + 1) * p)
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
    ow32 = (geo.ow * col.dtype.sizeof() + 31) // 32 * 32 // col.dtype.sizeof()
    if split.rows_per_pass > 0:
        asc.duplicate(spb, 0.0, buf)           # the padding blocks stay zero
    asc.set_flag(asc.HardEvent.V_MTE3, 0)
    asc.wait_flag(asc.HardEvent.V_MTE3, 0)
    if split.ch_per_copy > 0:
        ng = 0
        _channel_rows_shifted(qx, xg, colg, zb, geo, g0, min(split.groups_per_core, geo.c - g0),
                              split.ch_per_copy)
    for gi in range(ng):
        g = g0 + gi
        ci = g // geo.kh
        ki = g % geo.kh
        if geo.sw == 1:
            _group_rows_shifted(qx, xg, colg, zb, geo, ci, ki, split.rows_per_copy, buf)
        elif split.rows_per_pass > 0:
            _group_rows_sparse(spb, dnb, xg, colg, geo, ci, ki, split.rows_per_pass, ow32)
            _pad_rows(colg, zb, geo, ci, ki, buf)
        else:
            _group_rows_strided(qx, xg, colg, zb, geo, ci, ki, split.rows_per_copy, buf)
    if bidx == 0:
        asc.set_flag(asc.HardEvent.MTE3_V, 0)        # zb is still being read by MTE3
        asc.wait_flag(asc.HardEvent.MTE3_V, 0)
        asc.duplicate(zb, 1.0, buf)
        asc.set_flag(asc.HardEvent.V_MTE3, 0)
        asc.wait_flag(asc.HardEvent.V_MTE3, 0)
        _fill_run(colg, zb, geo.c * geo.kh * geo.kw * p, p, buf)
