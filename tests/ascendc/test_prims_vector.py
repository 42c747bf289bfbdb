"""Vector primitives (ascendc/lang/prims/vector.py) against numpy references.

Tensors are views into the core's local memory (`ctx[MEM]`), as the runtime makes them. Every
primitive is called from Python; `test_*_in_njit` call them from nopython code too.
"""
import inspect
import warnings

import numpy as np
import pytest
from numba import njit

from ascendc.lang import core, surface
from ascendc.lang.errors import KernelError
from ascendc.lang.params import BinaryRepeatParams, BrcbRepeatParams, UnaryRepeatParams
from ascendc.lang.prims import vector as V
from vec_helpers import (BF16, F16, F32, FLOATS, I16, I32, INTS, Arena, W, assert_close, ids,
                         isf, mask_to_words, rand, rep_lanes, tensors, vops, wide)

# ---- binary ops ------------------------------------------------------------------------------

def _div_ref(a, b, dt):
    if not isf(dt):
        a, b = a.astype(np.int64), b.astype(np.int64)
        q = np.where(b == 0, 0, np.abs(a) // np.where(b == 0, 1, np.abs(b)))
        return np.where((a < 0) != (b < 0), -q, q)
    return a / b


BIN = {
    "add": lambda a, b, dt: a + b,
    "sub": lambda a, b, dt: a - b,
    "mul": lambda a, b, dt: a * b,
    "div": _div_ref,
    "max": lambda a, b, dt: np.maximum(a, b),
    "min": lambda a, b, dt: np.minimum(a, b),
    "add_relu": lambda a, b, dt: np.maximum(a + b, 0),
    "sub_relu": lambda a, b, dt: np.maximum(a - b, 0),
    "bitwise_and": lambda a, b, dt: a & b,
    "bitwise_or": lambda a, b, dt: a | b,
}
BIN_CASES = ([(op, dt) for op in ("add", "sub", "mul", "max", "min", "add_relu", "sub_relu")
              for dt in FLOATS + INTS]
             + [("div", dt) for dt in FLOATS + [I32]]
             + [(op, dt) for op in ("bitwise_and", "bitwise_or") for dt in INTS])


def _ref_inputs(n, dt):
    a = rand(n, dt, -50, 50, seed=1)
    b = rand(n, dt, -50, 50, seed=2)
    if isf(dt):
        b = np.where(np.abs(b.astype(np.float64)) < 0.5, 1.5, b).astype(dt)
    else:
        b[::7] = 0  # integer division by zero -> 0
    return a, b


@pytest.mark.parametrize("op,dt", BIN_CASES, ids=ids)
def test_binary_count(op, dt):
    A = Arena()
    n, count = 256, 203                       # ragged count: the tail stays untouched
    av, bv = _ref_inputs(n, dt)
    a, _ = A.new(n, dt, av)
    b, _ = A.new(n, dt, bv)
    d, dl = A.new(n, dt, 7)
    getattr(V, op + "_count")(A.ctx, d, a, b, count)
    ref = BIN[op](wide(av), wide(bv), dt)
    assert_close(dl[:count], ref[:count], dt)
    assert (dl[count:] == 7).all()
    assert vops(A.ctx) == count


@pytest.mark.parametrize("op", ["add", "sub", "mul", "max"], ids=ids)
def test_binary_count_in_place(op):
    A = Arena()
    n = 1000
    av, bv = _ref_inputs(n, F32)
    a, al = A.new(n, F32, av)
    b, bl = A.new(n, F32, bv)
    getattr(V, op + "_count")(A.ctx, a, a, b, n)      # dst is src0
    assert_close(al, BIN[op](wide(av), wide(bv), F32), F32)
    al[:] = av
    getattr(V, op + "_count")(A.ctx, b, a, b, n)      # dst is src1
    assert_close(bl, BIN[op](wide(av), wide(bv), F32), F32)


BIN_REP = ([(op, F32) for op in BIN if not op.startswith("bitwise")]
           + [(op, F16) for op in ("add", "sub", "mul", "div", "max", "min", "add_relu",
                                   "sub_relu")]
           + [("add", BF16), ("add", I32), ("max", I16), ("bitwise_and", I16),
              ("bitwise_or", I32)])


@pytest.mark.parametrize("op,dt", BIN_REP, ids=ids)
def test_binary_rep(op, dt):
    A = Arena()
    lanes, pb = 256 // dt.itemsize, 32 // dt.itemsize
    n = 4 * lanes
    av, bv = _ref_inputs(n, dt)
    a, _ = A.new(n, dt, av)
    b, _ = A.new(n, dt, bv)
    d, dl = A.new(2 * n, dt, 3)
    # mask as two words: for 16-bit types the high word selects lanes 64..127
    mask = W(0xF0F0_00FF_0F0F_1234, 0x8000_0000_0000_0F01) if lanes == 128 else \
        W(0xFFFF_0000_FFFF_00F7)
    p = BinaryRepeatParams(dst_blk_stride=2, src0_blk_stride=1, src1_blk_stride=0,
                           dst_rep_stride=16, src0_rep_stride=8, src1_rep_stride=2)
    getattr(V, op + "_rep")(A.ctx, d, a, b, mask, 3, p, True)
    words = mask_to_words(mask, lanes)
    exp = dl.copy()
    exp[:] = 3
    ref = BIN[op]
    la = rep_lanes(3, lanes, words, pb, 1, 8)
    lb = rep_lanes(3, lanes, words, pb, 0, 2)
    ld_ = rep_lanes(3, lanes, words, pb, 2, 16)
    for (_, _, ia), (_, _, ib), (_, _, idd) in zip(la, lb, ld_):
        exp[idd] = np.asarray(ref(wide(av[ia:ia + 1]), wide(bv[ib:ib + 1]), dt)).astype(dt)[0]
    assert_close(dl, exp, dt)
    assert vops(A.ctx) == len(la)


@pytest.mark.parametrize("dt,mask", [(F32, 1), (F32, 17), (F32, 64), (F16, 1), (F16, 17),
                                     (F16, 64), (F16, 100), (F16, 128)], ids=ids)
def test_continuous_mask_and_repeat_limits(dt, mask):
    A = Arena()
    lanes = 256 // dt.itemsize
    n = 255 * lanes
    a, al = A.new(n, dt, 1)
    b, _ = A.new(n, dt, 2)
    d, dl = A.new(n, dt, 0)
    V.add_rep(A.ctx, d, a, b, mask, 255, BinaryRepeatParams(), True)   # the largest repeat
    got = dl.reshape(255, lanes)
    assert (got[:, :mask] == 3).all() and (got[:, mask:] == 0).all()
    V.add_rep(A.ctx, d, a, b, mask, 0, BinaryRepeatParams(), True)     # repeat 0 is a no-op
    assert vops(A.ctx) == 255 * mask


# ---- unary ops -------------------------------------------------------------------------------

UN = {
    "exp": (np.exp, -10, 10), "ln": (np.log, 0.01, 100), "sqrt": (np.sqrt, 0, 100),
    "rsqrt": (lambda x: 1 / np.sqrt(x), 0.01, 100), "reciprocal": (lambda x: 1 / x, 0.5, 50),
    "abs": (np.abs, -50, 50), "relu": (lambda x: np.maximum(x, 0), -50, 50),
    "bitwise_not": (np.invert, -1000, 1000),
}
UN_CASES = ([(op, dt) for op in ("exp", "ln", "sqrt", "rsqrt", "reciprocal") for dt in FLOATS]
            + [(op, dt) for op in ("abs", "relu") for dt in FLOATS + INTS]
            + [("bitwise_not", dt) for dt in INTS])
UN_RTOL = {"exp": 2e-6, "ln": 2e-6, "sqrt": 2e-6, "rsqrt": 2e-6}


@pytest.mark.parametrize("op,dt", UN_CASES, ids=ids)
def test_unary_count(op, dt):
    A = Arena()
    fn, lo, hi = UN[op]
    n, count = 300, 291
    av = rand(n, dt, lo, hi)
    a, al = A.new(n, dt, av)
    d, dl = A.new(n, dt, 5)
    getattr(V, op + "_count")(A.ctx, d, a, count)
    rtol = UN_RTOL.get(op) if dt == F32 else None
    assert_close(dl[:count], fn(wide(av))[:count], dt, rtol)
    assert (dl[count:] == 5).all()
    getattr(V, op + "_count")(A.ctx, a, a, count)     # in place
    assert_close(al[:count], fn(wide(av))[:count], dt, rtol)
    assert vops(A.ctx) == 2 * count


UN_REP = ([(op, F32) for op in UN if op != "bitwise_not"] + [(op, F16) for op in UN
                                                            if op != "bitwise_not"]
          + [("exp", BF16), ("abs", I32), ("relu", I16), ("bitwise_not", I16)])


@pytest.mark.parametrize("op,dt", UN_REP, ids=ids)
def test_unary_rep(op, dt):
    A = Arena()
    fn, lo, hi = UN[op]
    lanes, pb = 256 // dt.itemsize, 32 // dt.itemsize
    n = 6 * lanes
    av = rand(n, dt, lo, hi)
    a, _ = A.new(n, dt, av)
    d, dl = A.new(n, dt, 9)
    mask = lanes - 3
    p = UnaryRepeatParams(dst_blk_stride=1, src_blk_stride=2, dst_rep_stride=8,
                          src_rep_stride=16)
    getattr(V, op + "_rep")(A.ctx, d, a, mask, 2, p, True)
    words = mask_to_words(mask, lanes)
    exp = np.full(n, 9, dt)
    for (_, _, i_s), (_, _, i_d) in zip(rep_lanes(2, lanes, words, pb, 2, 16),
                                        rep_lanes(2, lanes, words, pb, 1, 8)):
        exp[i_d] = np.asarray(fn(wide(av[i_s:i_s + 1]))).astype(dt)[0]
    assert_close(dl, exp, dt, UN_RTOL.get(op) if dt == F32 else None)


def test_exp_special_values_and_accuracy():
    A = Arena()
    x = np.concatenate([np.linspace(-103, 88.7, 30000, dtype=np.float32),
                        np.array([0, -0.0, np.inf, -np.inf, np.nan, 89, -120, 1e-30],
                                 np.float32)])
    a, _ = A.new(x.size, F32, x)
    d, dl = A.new(x.size, F32)
    V.exp_count(A.ctx, d, a, x.size)
    ref = np.exp(x.astype(np.float64))
    normal = (ref > 1.2e-38) & (ref < 3.4e38)
    rel = np.abs(dl[normal] - ref[normal]) / ref[normal]
    assert rel.max() < 2e-7
    assert dl[-8] == 1 and dl[-7] == 1 and dl[-6] == np.inf and dl[-5] == 0
    assert np.isnan(dl[-4]) and dl[-3] == np.inf and dl[-2] == 0 and dl[-1] == 1


# ---- tensor-scalar ops -----------------------------------------------------------------------

SC = {
    "adds": lambda x, s: x + s, "muls": lambda x, s: x * s, "maxs": np.maximum,
    "mins": np.minimum, "leaky_relu": lambda x, s: np.where(x >= 0, x, x * s),
}
SC_CASES = ([(op, dt) for op in ("adds", "muls", "maxs", "mins") for dt in FLOATS + INTS]
            + [("leaky_relu", dt) for dt in FLOATS])


@pytest.mark.parametrize("op,dt", SC_CASES, ids=ids)
def test_scalar_count(op, dt):
    A = Arena()
    n, count = 160, 157
    av = rand(n, dt, -30, 30)
    a, _ = A.new(n, dt, av)
    d, dl = A.new(n, dt, 4)
    s = 0.3 if isf(dt) else 3
    getattr(V, op + "_count")(A.ctx, d, a, s, count)
    s_t = wide(np.asarray(s, dt))                                       # rounded to T first
    assert_close(dl[:count], SC[op](wide(av), s_t)[:count], dt)
    assert (dl[count:] == 4).all()


SC_REP = [(op, F32) for op in SC] + [(op, F16) for op in SC] + [("adds", I16), ("maxs", I32)]


@pytest.mark.parametrize("op,dt", SC_REP, ids=ids)
def test_scalar_rep(op, dt):
    A = Arena()
    lanes, pb = 256 // dt.itemsize, 32 // dt.itemsize
    n = 3 * lanes
    av = rand(n, dt, -30, 30)
    a, _ = A.new(n, dt, av)
    d, dl = A.new(n, dt, 4)
    s = -0.7 if isf(dt) else 2
    mask = W(0x0123_4567_89AB_CDEF, 0xFEDC_BA98_7654_3210) if lanes == 128 else W(2**64 - 1)
    getattr(V, op + "_rep")(A.ctx, d, a, s, mask, 3, UnaryRepeatParams(), True)
    words = mask_to_words(mask, lanes)
    exp = np.full(n, 4, dt)
    s_t = wide(np.asarray(s, dt))
    for _, _, i in rep_lanes(3, lanes, words, pb, 1, 8):
        exp[i] = np.asarray(SC[op](wide(av[i:i + 1]), s_t)).astype(dt)[0]
    assert_close(dl, exp, dt)


@pytest.mark.parametrize("ddt,sdt", [(F32, F32), (F16, F16), (F32, F16)], ids=ids)
def test_axpy(ddt, sdt):
    A = Arena()
    n, count = 300, 290
    dv, sv = rand(n, ddt, seed=3), rand(n, sdt, seed=4)
    d, dl = A.new(n, ddt, dv)
    s, _ = A.new(n, sdt, sv)
    V.axpy_count(A.ctx, d, s, 0.5, count)
    ref = wide(dv) + wide(sv) * 0.5
    assert_close(dl[:count], ref[:count], ddt)
    assert (dl[count:] == dv[count:]).all()
    dl[:] = dv
    lanes = 256 // max(ddt.itemsize, sdt.itemsize)
    p = UnaryRepeatParams(dst_rep_stride=8 * lanes * ddt.itemsize // 256,
                          src_rep_stride=8 * lanes * sdt.itemsize // 256)
    V.axpy_rep(A.ctx, d, s, 0.5, lanes, 2, p, True)          # contiguous: 2 repeats
    assert_close(dl[:2 * lanes], ref[:2 * lanes], ddt)
    assert (dl[2 * lanes:] == dv[2 * lanes:]).all()


# ---- duplicate, brcb -------------------------------------------------------------------------

@pytest.mark.parametrize("dt", FLOATS + INTS, ids=ids)
def test_duplicate(dt):
    A = Arena()
    lanes, pb = 256 // dt.itemsize, 32 // dt.itemsize
    n = 4 * lanes
    d, dl = A.new(n, dt, 1)
    V.duplicate_count(A.ctx, d, 2.5 if isf(dt) else -7, 100)
    v = np.asarray(2.5 if isf(dt) else -7, dt)
    assert (dl[:100] == v).all() and (dl[100:] == 1).all()
    dl[:] = 1
    if dt in (F32, F16, I16):
        V.duplicate_rep(A.ctx, d, 6, (0b1011,), 2, 2, 16, True)
        exp = np.ones(n, dt)
        for _, _, i in rep_lanes(2, lanes, (0b1011, 0), pb, 2, 16):
            exp[i] = 6
        np.testing.assert_array_equal(dl, exp)


@pytest.mark.parametrize("dt", [F32, F16, I32], ids=ids)
def test_brcb(dt):
    A = Arena()
    pb = 32 // dt.itemsize
    src, _ = A.new(24, dt, np.arange(1, 25).astype(dt))
    d, dl = A.new(3 * 16 * pb, dt, 0)
    V.brcb(A.ctx, d, src, 3, BrcbRepeatParams(dst_blk_stride=2, dst_rep_stride=16))
    exp = np.zeros(3 * 16 * pb, dt)
    for r in range(3):
        for k in range(8):
            base = (r * 16 + k * 2) * pb
            exp[base:base + pb] = r * 8 + k + 1
    np.testing.assert_array_equal(dl, exp)


# ---- errors ----------------------------------------------------------------------------------



def test_count_errors():
    A, a, b, d = tensors()
    with pytest.raises(KernelError, match=r"add: src1 must hold count elements, got count=230 "
                       r"for a tensor of 200 elements in UB"):
        V.add_count(A.ctx, d, a, b[:200], 230)
    with pytest.raises(KernelError, match=r"muls: dst must hold count elements, got count=-1"):
        V.muls_count(A.ctx, d, a, 2.0, -1)
    big = A.new(512, F32)[0]
    with pytest.raises(KernelError, match=r"exp: src must hold count elements, got count=257"):
        V.exp_count(A.ctx, big, a, 257)
    with pytest.raises(KernelError, match=r"duplicate: dst must hold count elements"):
        V.duplicate_count(A.ctx, d, 1.0, 999)
    with pytest.raises(KernelError, match=r"cast: dst must hold count elements"):
        V.cast_count(A.ctx, d[:10], a, 0, 11)


def test_dtype_errors():
    A, a, b, d = tensors()
    h = A.new(256, F16)[0]
    i = A.new(256, I32)[0]
    with pytest.raises(KernelError, match=r"add: src0 dtype must equal dst's \(float32\), got "
                       r"dtype=float16"):
        V.add_count(A.ctx, d, h, b, 8)
    with pytest.raises(KernelError, match=r"exp: dst dtype must be a float type, got "
                       r"dtype=int32"):
        V.exp_count(A.ctx, i, i, 8)
    with pytest.raises(KernelError, match=r"bitwise_and: dst dtype must be an integer type, got "
                       r"dtype=float32"):
        V.bitwise_and_count(A.ctx, d, a, b, 8)
    with pytest.raises(KernelError, match=r"sub: src1 dtype must equal dst's \(float32\), got "
                       r"dtype=int32"):
        V.sub_rep(A.ctx, d, a, i, 64, 1, BinaryRepeatParams(), True)


def test_mask_high_word_ignored_for_32_bit_elements():
    # the NPU reads only mask[0] when a repeat has 64 lanes (pyasc's test_vadd_bits passes
    # [2**64-1, 2**64-1] for float32): mask[1] is dropped; checked mode warns naming api and
    # value, unchecked runs are silent. Unchecked goes first, so its silence is not the
    # once-per-message deduplication of kernel warnings.
    av, bv = rand(128, F32, -50, 50, seed=1), rand(128, F32, -50, 50, seed=2)
    exp = np.full(128, 7, F32)
    exp[[0, 2]] = av[[0, 2]] + bv[[0, 2]]
    for flags in (0, core.FLAG_NAN_FILL):
        A = Arena(flags)
        a, _ = A.new(128, F32, av)
        b, _ = A.new(128, F32, bv)
        d, dl = A.new(128, F32, 7)
        if flags:
            with pytest.warns(RuntimeWarning, match=r"add: mask\[1\] is ignored for 32-bit "
                              r"elements \(64 lanes\), got mask\[1\]=12345"):
                V.add_rep(A.ctx, d, a, b, W(0b101, 12345), 1, BinaryRepeatParams(), True)
        else:   # (recorded: an "error" filter would not raise through the compiled prim)
            with warnings.catch_warnings(record=True) as rec:
                warnings.simplefilter("always")
                V.add_rep(A.ctx, d, a, b, W(0b101, 12345), 1, BinaryRepeatParams(), True)
            assert [str(w.message) for w in rec] == []
        assert_close(dl, exp, F32)
        assert vops(A.ctx) == 2


def test_repeat_form_errors():
    A, a, b, d = tensors()
    p = BinaryRepeatParams()
    with pytest.raises(KernelError, match=r"add: repeat_times must be in \[0, 255\], got "
                       r"repeat_times=256"):
        V.add_rep(A.ctx, d, a, b, 64, 256, p, True)
    with pytest.raises(KernelError, match=r"add: mask must be in \[1, 64\], got mask=65"):
        V.add_rep(A.ctx, d, a, b, 65, 1, p, True)
    with pytest.raises(KernelError, match=r"add: mask must be in \[1, 64\], got mask=0"):
        V.add_rep(A.ctx, d, a, b, 0, 1, p, True)
    # past a tensor's end runs inside UB (test_repeat_form_reach_past_the_tensor_runs); past
    # UB's capacity it traps: 255 repeats 255 blocks apart reach element 254 * 255 * 8 + 63
    ub = int(core.state(A.ctx).level_size[core.UB])
    with pytest.raises(KernelError, match=rf"add: dst must stay inside UB, got index=518223 "
                       rf"for a tensor at UB byte 2048 \({ub} bytes of UB\)"):
        V.add_rep(A.ctx, d, a, b, 64, 255, BinaryRepeatParams(dst_rep_stride=255), True)
    with pytest.raises(KernelError, match=rf"mul: src1 must stay inside UB, got index=518223 "
                       rf"for a tensor at UB byte 1024 \({ub} bytes of UB\)"):
        V.mul_rep(A.ctx, d, a, b, 64, 255, BinaryRepeatParams(src1_rep_stride=255), True)
    with pytest.raises(KernelError, match=r"add: repeat_params.dst_blk_stride must be in "
                       r"\[0, 255\], got repeat_params.dst_blk_stride=-1"):
        V.add_rep(A.ctx, d, a, b, 64, 1, BinaryRepeatParams(dst_blk_stride=-1), True)
    with pytest.raises(KernelError, match=r"abs: repeat_params.src_rep_stride must be in "
                       r"\[0, 255\], got repeat_params.src_rep_stride=256"):
        V.abs_rep(A.ctx, d, a, 64, 1, UnaryRepeatParams(src_rep_stride=256), True)
    with pytest.raises(KernelError, match=r"duplicate: dst_repeat_stride must be in \[0, 255\]"):
        V.duplicate_rep(A.ctx, d, 1.0, 64, 1, 1, 300, True)
    u8 = A.new(256, np.uint8)[0]
    with pytest.raises(KernelError, match=r"duplicate: the mask/repeat form needs 16-, 32- or "
                       r"64-bit elements, got 8-bit elements"):
        V.duplicate_rep(A.ctx, u8, 1, 64, 1, 1, 8, True)


def test_repeat_form_reach_past_the_tensor_runs():
    # as on the NPU, a repeat form reaching past its tensor's end but inside UB runs: writes
    # land in the UB after dst, reads see the UB after src1; checked mode says so
    A = Arena(core.FLAG_NAN_FILL)
    av, bv = rand(320, F32, seed=3), rand(320, F32, seed=4)
    a, _ = A.new(320, F32, av)                          # UB bytes [0, 1280)
    bfull, _ = A.new(320, F32, bv)                      # [1280, 2560): b is its first 256
    dfull, dl = A.new(320, F32, 0)                      # [2560, 3840): d is its first 256
    b, d = bfull[:256], dfull[:256]
    with pytest.warns(RuntimeWarning, match=r"add: dst is read/written past its 256 elements "
                      r"\(up to index=319, UB byte 3840\); allowed inside UB as on the NPU"):
        V.add_rep(A.ctx, d, a, bfull, 64, 5, BinaryRepeatParams(), True)
    assert_close(dl, av + bv, F32)
    dl[:] = 0
    with pytest.warns(RuntimeWarning, match=r"mul: src1 is read/written past its 256 elements "
                      r"\(up to index=263, UB byte 2336\); allowed inside UB as on the NPU"):
        V.mul_rep(A.ctx, dfull, a, b, 64, 2, BinaryRepeatParams(src1_rep_stride=25), True)
    exp = np.zeros(320, F32)
    exp[:64] = av[:64] * bv[:64]
    exp[64:128] = av[64:128] * bv[200:264]              # repeat 1: src1 from element 200
    assert_close(dl, exp, F32)


# ---- from nopython code ----------------------------------------------------------------------

@njit
def _njit_vector_f32(ctx, d, a, b, m, sel):
    """Calls every vector primitive (float32 forms) from nopython code."""
    bp = BinaryRepeatParams(1, 1, 1, 8, 8, 8)
    up = UnaryRepeatParams(1, 1, 8, 8)
    V.add_count(ctx, d, a, b, 64)
    V.add_rep(ctx, d, a, b, 64, 1, bp, True)
    V.sub_count(ctx, d, a, b, 64)
    V.sub_rep(ctx, d, a, b, (np.uint64(7), np.uint64(0)), 1, bp, True)
    V.mul_count(ctx, d, a, b, 64)
    V.mul_rep(ctx, d, a, b, 64, 1, bp, True)
    V.div_count(ctx, d, a, b, 64)
    V.div_rep(ctx, d, a, b, 64, 1, bp, True)
    V.max_count(ctx, d, a, b, 64)
    V.max_rep(ctx, d, a, b, 64, 1, bp, True)
    V.min_count(ctx, d, a, b, 64)
    V.min_rep(ctx, d, a, b, 64, 1, bp, True)
    V.add_relu_count(ctx, d, a, b, 64)
    V.add_relu_rep(ctx, d, a, b, 64, 1, bp, True)
    V.sub_relu_count(ctx, d, a, b, 64)
    V.sub_relu_rep(ctx, d, a, b, 64, 1, bp, True)
    V.exp_count(ctx, d, a, 64)
    V.exp_rep(ctx, d, a, 64, 1, up, True)
    V.ln_count(ctx, d, b, 64)
    V.ln_rep(ctx, d, b, 64, 1, up, True)
    V.sqrt_count(ctx, d, b, 64)
    V.sqrt_rep(ctx, d, b, 64, 1, up, True)
    V.rsqrt_count(ctx, d, b, 64)
    V.rsqrt_rep(ctx, d, b, 64, 1, up, True)
    V.reciprocal_count(ctx, d, b, 64)
    V.reciprocal_rep(ctx, d, b, 64, 1, up, True)
    V.abs_count(ctx, d, a, 64)
    V.abs_rep(ctx, d, a, 64, 1, up, True)
    V.relu_count(ctx, d, a, 64)
    V.relu_rep(ctx, d, a, 64, 1, up, True)
    V.adds_count(ctx, d, a, 1.5, 64)
    V.adds_rep(ctx, d, a, np.float32(1.5), 64, 1, up, True)
    V.muls_count(ctx, d, a, 2.0, 64)
    V.muls_rep(ctx, d, a, 2.0, 64, 1, up, True)
    V.maxs_count(ctx, d, a, 0.0, 64)
    V.maxs_rep(ctx, d, a, 0.0, 64, 1, up, True)
    V.mins_count(ctx, d, a, 0.0, 64)
    V.mins_rep(ctx, d, a, 0.0, 64, 1, up, True)
    V.leaky_relu_count(ctx, d, a, 0.1, 64)
    V.leaky_relu_rep(ctx, d, a, 0.1, 64, 1, up, True)
    V.axpy_count(ctx, d, a, 0.5, 64)
    V.axpy_rep(ctx, d, a, 0.5, 64, 1, up, True)
    V.duplicate_count(ctx, d, 1.0, 64)
    V.duplicate_rep(ctx, d, 1.0, 64, 1, 1, 8, True)
    V.brcb(ctx, d, a, 1, BrcbRepeatParams(1, 8))
    V.cast_count(ctx, d, a, 4, 64)
    V.cast_rep(ctx, d, a, 5, 64, 1, up, True)
    V.compare_count(ctx, m, a, b, 0, 64)
    V.compare_rep(ctx, m, a, b, 1, 64, 1, bp, True)
    V.compare_scalar_count(ctx, m, a, 0.0, 2, 64)
    V.compare_scalar_rep(ctx, m, a, 0.0, 3, 64, 1, up, True)
    V.select_count(ctx, d, sel, a, b, 2, 64)
    V.select_rep(ctx, d, sel, a, b, 0, 64, 1, bp, True)
    V.select_count(ctx, d, sel, a, 3.0, 1, 64)
    V.select_rep(ctx, d, sel, a, 3.0, 1, 64, 1, bp, True)


@njit
def _njit_vector_int(ctx, d, a, b):
    bp = BinaryRepeatParams(1, 1, 1, 8, 8, 8)
    up = UnaryRepeatParams(1, 1, 8, 8)
    V.bitwise_and_count(ctx, d, a, b, 64)
    V.bitwise_and_rep(ctx, d, a, b, 64, 1, bp, True)
    V.bitwise_or_count(ctx, d, a, b, 64)
    V.bitwise_or_rep(ctx, d, a, b, 64, 1, bp, True)
    V.bitwise_not_count(ctx, d, a, 64)
    V.bitwise_not_rep(ctx, d, a, 64, 1, up, True)


def test_surface_forms_name_primitives_with_their_parameter_order():
    from ascendc.lang.prims import reduce as R
    mine = {n: getattr(mod, n) for mod in (V, R) for n in mod.__all__}
    used = set()
    for name, row in surface.FUNCTIONS.items():
        for form in row.forms:
            if form.prim in mine:
                used.add(form.prim)
                params = list(inspect.signature(mine[form.prim].py_func).parameters)
                assert params == ["ctx", *form.params], form.prim
    assert used == set(mine)


def test_vector_in_njit():
    A = Arena()
    a, _ = A.new(256, F32, rand(256, F32))
    b, _ = A.new(256, F32, rand(256, F32, 0.5, 3))
    d, dl = A.new(256, F32)
    m, _ = A.new(64, np.uint8)
    sel, _ = A.new(16, np.uint16, 0x5555)
    _njit_vector_f32(A.ctx, d, a, b, m, sel)
    exp = np.where(np.arange(64) % 2 == 0, rand(256, F32)[:64], 3.0)   # last call: select mode 1
    np.testing.assert_array_equal(dl[:64], exp.astype(np.float32))
    ia, ial = A.new(256, I16, rand(256, I16, -99, 99))
    ib, ibl = A.new(256, I16, rand(256, I16, -99, 99, seed=3))
    idst, idl = A.new(256, I16)
    _njit_vector_int(A.ctx, idst, ia, ib)
    np.testing.assert_array_equal(idl[:64], ~ial[:64])
    with pytest.raises(KernelError, match=r"add: mask must be in \[1, 64\], got mask=99"):
        _njit_bad_mask(A.ctx, d, a, b)
    # constants at call sites do not create per-value (Literal) specialisations
    for prim in (V.add_count, V.add_rep, V.cast_count, V.select_count):
        assert not any("Literal" in str(sig) for sig in prim.signatures), prim


@njit
def _njit_bad_mask(ctx, d, a, b):
    V.add_rep(ctx, d, a, b, 99, 1, BinaryRepeatParams(1, 1, 1, 8, 8, 8), True)
