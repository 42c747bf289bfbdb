"""Repeat forms with an int mask (lanes 0..n-1) take a block-by-block fast path: it must give what
the lane-by-lane walk of Ascend C's semantics gives, element order included (dst overlapping a
source, block stride 0), and NaN handling in the value-only whole_reduce max/min."""
import numpy as np
import pytest

from ascendc.lang.params import BinaryRepeatParams, UnaryRepeatParams
from ascendc.lang.prims import reduce as R
from ascendc.lang.prims import vector as V

from prim_core import Arena

F32, F16 = np.dtype(np.float32), np.dtype(np.float16)


def lane_index(r, j, pb, blk, rep):
    return r * rep * pb + (j // pb) * blk * pb + j % pb


def walk(buf, repeat, n_on, pb, strides, fn):
    """Lane-by-lane reference on one flat array `buf` holding every operand: strides is
    ((off, blk, rep) of dst, then of each source); fn(*source values) -> dst value."""
    (doff, dblk, drep), *srcs = strides
    for r in range(repeat):
        for j in range(n_on):
            vals = [buf[o + lane_index(r, j, pb, b, rp)] for o, b, rp in srcs]
            buf[doff + lane_index(r, j, pb, dblk, drep)] = fn(*vals)


@pytest.mark.parametrize("dt", [F32, F16], ids=str)
@pytest.mark.parametrize("n_on", [1, 5, 40, 64, 100, 128])
@pytest.mark.parametrize("p,offs", [
    ((1, 1, 1, 8, 8, 8), (0, 0, 2048)),          # in place on src0
    ((1, 1, 0, 8, 8, 1), (0, 0, 2048)),          # src1 block broadcast (the brcb pattern)
    ((2, 1, 0, 16, 8, 2), (512, 0, 2048)),       # strided dst, separate
    ((1, 1, 1, 8, 8, 8), (8, 0, 2048)),          # dst overlaps src0 one block later
])
def test_binary_rep_int_mask_matches_lane_walk(dt, n_on, p, offs):
    lanes, pb = 256 // dt.itemsize, 32 // dt.itemsize
    if n_on > lanes:
        pytest.skip("more lanes than a repeat has")
    A = Arena()
    rng = np.random.default_rng(n_on)
    store, buf = A.new(4096, dt, rng.standard_normal(4096).astype(dt))
    ref = buf.copy()
    d0, a0, b0 = offs
    prm = BinaryRepeatParams(*p)
    V.add_rep(A.ctx, store[d0:], store[a0:], store[b0:], n_on, 3, prm, True)
    walk(ref, 3, n_on, pb, ((d0, p[0], p[3]), (a0, p[1], p[4]), (b0, p[2], p[5])),
         lambda x, y: (np.float32(x) + np.float32(y)).astype(dt))
    np.testing.assert_array_equal(buf.view(np.uint8), ref.view(np.uint8))


@pytest.mark.parametrize("dt", [F32, F16], ids=str)
@pytest.mark.parametrize("n_on", [3, 64, 128])
def test_unary_and_scalar_rep_int_mask_in_place_with_gaps(dt, n_on):
    lanes, pb = 256 // dt.itemsize, 32 // dt.itemsize
    if n_on > lanes:
        pytest.skip("more lanes than a repeat has")
    A = Arena()
    store, buf = A.new(4096, dt, np.linspace(-3, 3, 4096).astype(dt))
    ref = buf.copy()
    p = UnaryRepeatParams(2, 1, 16, 8)       # dst blocks every other block, src packed
    V.abs_rep(A.ctx, store[8:], store, n_on, 2, p, True)
    walk(ref, 2, n_on, pb, ((8, 2, 16), (0, 1, 8)), lambda x: abs(x))
    V.muls_rep(A.ctx, store, store, 2.0, n_on, 2, UnaryRepeatParams(1, 1, 8, 8), True)
    walk(ref, 2, n_on, pb, ((0, 1, 8), (0, 1, 8)), lambda x: (np.float32(x) * 2).astype(dt))
    np.testing.assert_array_equal(buf.view(np.uint8), ref.view(np.uint8))


@pytest.mark.parametrize("op,order", [("max", 2), ("min", 2), ("max", 0), ("min", 0)])
@pytest.mark.parametrize("dt", [F32, F16], ids=str)
def test_whole_reduce_int_mask_matches_lane_walk_with_nans(op, order, dt):
    lanes, pb = 256 // dt.itemsize, 32 // dt.itemsize
    A = Arena()
    rng = np.random.default_rng(1)
    rows, n_on = 5, lanes - 3
    x, xl = A.new(rows * lanes, dt, rng.standard_normal(rows * lanes).astype(dt))
    xl[1 * lanes + 0] = np.nan                       # row 1: NaN in lane 0
    xl[2 * lanes + 7] = -np.nan                      # row 2: two NaNs, the first one wins
    xl[2 * lanes + 9] = np.nan
    xl[3 * lanes + n_on] = np.nan                    # row 3: NaN in a masked-off lane
    d, dl = A.new(2 * rows, dt, 0)
    getattr(R, "whole_reduce_" + op)(A.ctx, d, x, n_on, rows, 1, 1, 8 * lanes // (8 * pb),
                                     order, True)
    pick = np.argmax if op == "max" else np.argmin
    for r in range(rows):
        row = xl[r * lanes:r * lanes + n_on]
        nan = np.flatnonzero(np.isnan(row))
        j = nan[0] if nan.size else pick(row)
        got = dl[r] if order == 2 else dl[2 * r]
        assert got.view(np.uint16 if dt == F16 else np.uint32) == \
            row[j].view(np.uint16 if dt == F16 else np.uint32), (r, got, row[j])
        if order == 0:
            idx = dl[2 * r + 1:2 * r + 2].view(np.uint16 if dt == F16 else np.uint32)[0]
            assert idx == j


def test_whole_reduce_sum_int_mask():
    A = Arena()
    x, xl = A.new(4 * 64, F32, np.arange(256, dtype=np.float32))
    d, dl = A.new(8, F32, 0)
    R.whole_reduce_sum(A.ctx, d, x, 10, 4, 1, 1, 8, True)
    np.testing.assert_array_equal(dl[:4], [xl[r * 64:r * 64 + 10].sum() for r in range(4)])
