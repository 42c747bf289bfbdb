"""Vector primitives (ascendc/lang/prims/vector.py) against numpy references.

Tensors are views into the core's local memory (`ctx[0]`), as the runtime makes them. Every
primitive is called from Python; `test_*_in_njit` call them from nopython code too.
"""
import inspect

import ml_dtypes
import numpy as np
import pytest
from numba import njit

from ascendc.lang import core, surface
from ascendc.lang.errors import KernelError
from ascendc.lang.params import BinaryRepeatParams, BrcbRepeatParams, UnaryRepeatParams
from ascendc.lang.prims import vector as V

F32, F16, BF16 = np.dtype(np.float32), np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16)
I32, I16 = np.dtype(np.int32), np.dtype(np.int16)
FLOATS = [F32, F16, BF16]
INTS = [I32, I16]
TOL = {F32: 1e-6, F16: 1e-3, BF16: 8e-3}
from prim_core import Arena  # noqa: E402

ids = str


def isf(dt):
    return np.dtype(dt).kind == "f" or np.dtype(dt) == BF16


def rand(n, dtype, lo=-4.0, hi=4.0, seed=0):
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    if not isf(dt):
        return rng.integers(int(lo), int(hi), n).astype(dt)
    return rng.uniform(lo, hi, n).astype(dt)


def assert_close(got, ref, dtype, rtol=None):
    dt = np.dtype(dtype)
    if not isf(dt):
        np.testing.assert_array_equal(got, ref.astype(dt))
        return
    tol = rtol or TOL[dt]
    np.testing.assert_allclose(got.astype(np.float64), ref.astype(dt).astype(np.float64),
                               rtol=tol, atol=tol)


def rep_lanes(repeat, lanes, words, pb, blk, rep):
    """[(r, j, element index)] of the selected lanes, in hardware order."""
    w = words[0] | (words[1] << 64)
    return [(r, j, r * rep * pb + (j // pb) * blk * pb + j % pb)
            for r in range(repeat) for j in range(lanes) if (w >> j) & 1]


def W(w0, w1=0):
    """A bit-mode mask as the registry passes it: a 2-tuple of uint64 words."""
    return np.uint64(w0), np.uint64(w1)


def mask_to_words(mask, lanes):
    if isinstance(mask, tuple):
        return int(mask[0]), int(mask[1]) if len(mask) > 1 else 0
    w = (1 << mask) - 1
    return w & (2**64 - 1), w >> 64


def vops(ctx):
    return core.read_counters(ctx)["vector_elem_ops"]


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


def _wide(x):
    return x.astype(np.float64) if isf(x.dtype) else x.astype(np.int64)


@pytest.mark.parametrize("op,dt", BIN_CASES, ids=ids)
def test_binary_count(op, dt):
    A = Arena()
    n, count = 256, 203                       # ragged count: the tail stays untouched
    av, bv = _ref_inputs(n, dt)
    a, _ = A.new(n, dt, av)
    b, _ = A.new(n, dt, bv)
    d, dl = A.new(n, dt, 7)
    getattr(V, op + "_count")(A.ctx, d, a, b, count)
    ref = BIN[op](_wide(av), _wide(bv), dt)
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
    assert_close(al, BIN[op](_wide(av), _wide(bv), F32), F32)
    al[:] = av
    getattr(V, op + "_count")(A.ctx, b, a, b, n)      # dst is src1
    assert_close(bl, BIN[op](_wide(av), _wide(bv), F32), F32)


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
        exp[idd] = np.asarray(ref(_wide(av[ia:ia + 1]), _wide(bv[ib:ib + 1]), dt)).astype(dt)[0]
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
    assert_close(dl[:count], fn(_wide(av))[:count], dt, rtol)
    assert (dl[count:] == 5).all()
    getattr(V, op + "_count")(A.ctx, a, a, count)     # in place
    assert_close(al[:count], fn(_wide(av))[:count], dt, rtol)
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
        exp[i_d] = np.asarray(fn(_wide(av[i_s:i_s + 1]))).astype(dt)[0]
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
    s_t = _wide(np.asarray(s, dt))                                       # rounded to T first
    assert_close(dl[:count], SC[op](_wide(av), s_t)[:count], dt)
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
    s_t = _wide(np.asarray(s, dt))
    for _, _, i in rep_lanes(3, lanes, words, pb, 1, 8):
        exp[i] = np.asarray(SC[op](_wide(av[i:i + 1]), s_t)).astype(dt)[0]
    assert_close(dl, exp, dt)


@pytest.mark.parametrize("ddt,sdt", [(F32, F32), (F16, F16), (F32, F16)], ids=ids)
def test_axpy(ddt, sdt):
    A = Arena()
    n, count = 300, 290
    dv, sv = rand(n, ddt, seed=3), rand(n, sdt, seed=4)
    d, dl = A.new(n, ddt, dv)
    s, _ = A.new(n, sdt, sv)
    V.axpy_count(A.ctx, d, s, 0.5, count)
    ref = _wide(dv) + _wide(sv) * 0.5
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


# ---- cast ------------------------------------------------------------------------------------

def _round_ref(x, mode):
    x = np.asarray(x, np.float64)
    t = np.trunc(x)
    return {0: np.rint(x), 1: np.rint(x), 2: np.floor(x), 3: np.ceil(x),
            4: np.where(np.abs(x - t) >= 0.5, t + np.sign(x), t), 5: t,
            6: np.where((t == x) | (np.fmod(t, 2) != 0), t, t + np.sign(x))}[mode]


def _narrow_ref(x, dt, mode):
    """x (float64) rounded into float dtype dt with a directed round mode, via neighbours."""
    x = np.asarray(x, np.float64)
    rne = x.astype(dt)
    if mode in (0, 1):
        return rne
    out = np.empty_like(rne)
    bits = rne.view(np.uint16 if dt.itemsize == 2 else np.uint32)
    for i, (xi, ri) in enumerate(zip(x, rne)):
        rv = float(ri)
        if rv == xi or np.isnan(xi):
            out[i] = ri
            continue
        mag = int(bits[i]) & (0x7FFF if dt.itemsize == 2 else 0x7FFFFFFF)
        sign = int(bits[i]) - mag
        step = -1 if abs(rv) > abs(xi) else 1
        other = np.array([sign + mag + step], bits.dtype).view(dt)[0]
        t, u = (other, ri) if step == -1 else (ri, other)   # toward zero / away from zero
        t_mag, u_mag = abs(float(t)), abs(float(u))
        neg = xi < 0
        if mode == 5:
            m = t
        elif mode == 2:
            m = u if neg else t
        elif mode == 3:
            m = t if neg else u
        elif mode == 4:
            m = u if (u_mag - abs(xi)) <= (abs(xi) - t_mag) else t
        else:
            tb = np.array([t], dt).view(bits.dtype)[0]
            m = t if tb & 1 else u
        out[i] = m
    return out


CAST_CASES = [
    (F32, F16, m) for m in range(7)] + [(F32, BF16, m) for m in (1, 2, 3, 4, 5)] + [
    (F16, F32, 0), (BF16, F32, 0), (F16, BF16, 2), (BF16, F16, 3)] + [
    (F32, I32, m) for m in range(7)] + [(F16, I16, 4), (F16, np.dtype(np.int8), 5),
                                        (BF16, I32, 3), (F32, F32, 4)] + [
    (I32, F32, m) for m in (0, 2, 3)] + [(I16, F16, 0), (I32, I16, 0),
                                         (np.dtype(np.int64), I32, 0)]


@pytest.mark.parametrize("sdt,ddt,mode", CAST_CASES, ids=ids)
def test_cast_count(sdt, ddt, mode):
    A = Arena()
    n = 256
    if isf(sdt):
        big = 300.0 if ddt.itemsize < 4 and not isf(ddt) else 3e5 if sdt != F16 else 6e4
        sv = rand(n, sdt, -big, big, seed=5)
        sv[:6] = [0.5, -0.5, 2.5, -2.5, 1.5, 7.0]
        if isf(ddt):
            sv = (sv.astype(np.float64) / 7.3).astype(sdt)
    else:
        sv = rand(n, sdt, -2**20 if sdt.itemsize >= 4 else -30000, 2**20 if sdt.itemsize >= 4
                  else 30000, seed=6)
        if sdt == np.dtype(np.int64):
            sv[:2] = [2**40, -2**40]                          # saturate
        if sdt == I32 and ddt == F32:
            sv[:2] = [2**25 + 3, -(2**25 + 3)]                # inexact in float32
    s, _ = A.new(n, sdt, sv)
    d, dl = A.new(n, ddt, 0)
    V.cast_count(A.ctx, d, s, mode, n)
    x = _wide(sv)
    if not isf(ddt):
        info = np.iinfo(ddt)
        ref = np.clip(_round_ref(x, mode) if isf(sdt) else x, info.min, info.max)
        np.testing.assert_array_equal(dl, ref.astype(ddt))
    elif sdt == ddt:
        np.testing.assert_array_equal(dl, _round_ref(x, mode).astype(ddt))
    else:
        ref = _narrow_ref(x, ddt, mode) if ddt.itemsize < sdt.itemsize or not isf(sdt) or \
            ddt.itemsize == sdt.itemsize else x.astype(ddt)
        np.testing.assert_array_equal(dl.view(np.uint8), np.asarray(ref, ddt).view(np.uint8))


def test_cast_documented_examples():
    """The worked examples of Ascend C's precision-conversion rules."""
    A = Arena()
    s, sl = A.new(8, F32, [0.5 + 2**-12, 2**22 + 0.5, -1.5, 0.5, 2**22 + 0.5, 0, 0, 0])
    h, hl = A.new(8, F16)
    i, il = A.new(8, I32)
    f, fl = A.new(8, F32)
    expect_h = {1: 0.5, 2: 0.5, 3: 0.5 + 2**-11, 4: 0.5 + 2**-11, 5: 0.5, 6: 0.5 + 2**-11}
    for mode, v in expect_h.items():
        V.cast_count(A.ctx, h, s, mode, 1)
        assert float(hl[0]) == v, mode
    expect_i = {1: [2**22, -2], 2: [2**22, -2], 3: [2**22 + 1, -1], 4: [2**22 + 1, -2],
                5: [2**22, -1]}
    for mode, v in expect_i.items():
        V.cast_count(A.ctx, i, s[1:3], mode, 2)
        assert list(il[:2]) == v, mode
    expect_f = {1: 0.0, 2: 0.0, 3: 1.0, 4: 1.0, 5: 0.0}
    for mode, v in expect_f.items():
        V.cast_count(A.ctx, f, s[3:4], mode, 1)
        assert fl[0] == v, mode
    sl[:3] = [np.nan, 1e10, -1e10]                      # NaN -> 0, saturation
    V.cast_count(A.ctx, i, s, 1, 3)
    assert list(il[:3]) == [0, 2**31 - 1, -2**31]


def test_cast_rep_follows_the_wider_type():
    A = Arena()
    sv = rand(256, F16, seed=7)
    s, sl = A.new(256, F16, sv)
    d, dl = A.new(256, F32, -1)
    # half -> float: 64 lanes per repeat; the src advances 4 blocks, dst 8 blocks per repeat
    V.cast_rep(A.ctx, d, s, 0, 64, 3, UnaryRepeatParams(dst_rep_stride=8, src_rep_stride=4),
               True)
    np.testing.assert_array_equal(dl[:192], sv[:192].astype(np.float32))
    assert (dl[192:] == -1).all()
    dl[:8] += np.float32(1e-3)                           # float -> half, TRUNC, lanes 0..7
    V.cast_rep(A.ctx, s, d, 5, W(0xFF), 1, UnaryRepeatParams(dst_rep_stride=4), True)
    np.testing.assert_array_equal(sl[:8], _narrow_ref(dl[:8].astype(np.float64), F16, 5))
    np.testing.assert_array_equal(sl[8:], sv[8:])


# ---- compare / select ------------------------------------------------------------------------

CMP = [np.less, np.greater, np.equal, np.less_equal, np.greater_equal, np.not_equal]


@pytest.mark.filterwarnings("ignore:invalid value encountered")   # bfloat16 NaN compares
@pytest.mark.parametrize("dt", [F32, F16, BF16, I32], ids=ids)
def test_compare_count(dt):
    A = Arena()
    lanes = 256 // dt.itemsize
    n = 3 * lanes
    av, bv = rand(n, dt, -3, 3, seed=8), rand(n, dt, -3, 3, seed=9)
    bv[::5] = av[::5]                                   # some equal elements
    if isf(dt):
        av[3] = np.nan
    a, _ = A.new(n, dt, av)
    b, _ = A.new(n, dt, bv)
    m, ml = A.new(n // 8 + 32, np.uint8, 0xAA)
    for mode, fn in enumerate(CMP):
        ml[:] = 0xAA
        V.compare_count(A.ctx, m, a, b, mode, 2 * lanes + 5)  # the ragged tail is skipped
        bits = np.unpackbits(ml, bitorder="little").astype(bool)
        np.testing.assert_array_equal(bits[:2 * lanes], fn(av, bv)[:2 * lanes])
        assert (ml[2 * lanes // 8:] == 0xAA).all()
        V.compare_scalar_count(A.ctx, m, a, float(bv[0]) if isf(dt) else int(bv[0]),
                               mode, 2 * lanes)
        bits = np.unpackbits(ml, bitorder="little").astype(bool)
        np.testing.assert_array_equal(bits[:2 * lanes], fn(av, bv[0])[:2 * lanes])


@pytest.mark.parametrize("dt", [F32, F16], ids=ids)
def test_compare_rep(dt):
    A = Arena()
    lanes, pb = 256 // dt.itemsize, 32 // dt.itemsize
    n = 8 * lanes
    av, bv = rand(n, dt, seed=10), rand(n, dt, seed=11)
    a, _ = A.new(n, dt, av)
    b, _ = A.new(n, dt, bv)
    m, ml = A.new(n // 8, np.uint8, 0)
    p = BinaryRepeatParams(src0_blk_stride=2, src0_rep_stride=16, src1_rep_stride=8)
    V.compare_rep(A.ctx, m, a, b, 1, 5, 3, p, True)      # mask is reserved on A2: all lanes
    bits = np.unpackbits(ml, bitorder="little").astype(bool)
    full = (2**64 - 1, 2**64 - 1 if lanes == 128 else 0)
    ia = [i for _, _, i in rep_lanes(3, lanes, full, pb, 2, 16)]
    ib = [i for _, _, i in rep_lanes(3, lanes, full, pb, 1, 8)]
    np.testing.assert_array_equal(bits[:3 * lanes], av[ia] > bv[ib])
    assert not bits[3 * lanes:].any()
    ml[:] = 0
    V.compare_scalar_rep(A.ctx, m, a, 0.25, 0, 64, 2, UnaryRepeatParams(src_rep_stride=16),
                         True)
    bits = np.unpackbits(ml, bitorder="little").astype(bool)
    idx = [i for _, _, i in rep_lanes(2, lanes, full, pb, 1, 16)]
    np.testing.assert_array_equal(bits[:2 * lanes], av[idx] < np.asarray(0.25, dt))


@pytest.mark.parametrize("dt", [F32, F16], ids=ids)
@pytest.mark.parametrize("mode", [0, 1, 2], ids=ids)
def test_select(dt, mode):
    A = Arena()
    lanes, pb = 256 // dt.itemsize, 32 // dt.itemsize
    n = 3 * lanes
    av, bv = rand(n, dt, seed=12), rand(n, dt, seed=13)
    a, _ = A.new(n, dt, av)
    b, _ = A.new(n, dt, bv)
    selbits = np.random.default_rng(14).integers(0, 2, n).astype(bool)
    sel, _ = A.new(n // 16, np.uint16, np.packbits(selbits, bitorder="little").view(np.uint16))
    d, dl = A.new(n, dt, 0)
    src1 = 1.25 if mode == 1 else b
    other = np.full(n, 1.25, dt) if mode == 1 else bv
    count = n - 7
    V.select_count(A.ctx, d, sel, a, src1, mode, count)
    bit = selbits[np.arange(n) % lanes] if mode == 0 else selbits
    np.testing.assert_array_equal(dl[:count], np.where(bit, av, other)[:count])
    assert (dl[count:] == 0).all()
    dl[:] = 0
    mask = W(0x0000_FFFF_FFFF_0000, 0xFF) if lanes == 128 else W(0xFFFF_FFFF_0000_FFFF)
    V.select_rep(A.ctx, d, sel, a, src1, mode, mask, 2, BinaryRepeatParams(), True)
    words = mask_to_words(mask, lanes)
    exp = np.zeros(n, dt)
    for r, j, i in rep_lanes(2, lanes, words, pb, 1, 8):
        bitv = selbits[j] if mode == 0 else selbits[r * lanes + j]
        exp[i] = av[i] if bitv else other[i]
    np.testing.assert_array_equal(dl, exp)


# ---- errors ----------------------------------------------------------------------------------

def _tensors(dt=F32, n=256):
    A = Arena()
    return A, A.new(n, dt)[0], A.new(n, dt)[0], A.new(n, dt)[0]


def test_count_errors():
    A, a, b, d = _tensors()
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
    A, a, b, d = _tensors()
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


def test_repeat_form_errors():
    A, a, b, d = _tensors()
    p = BinaryRepeatParams()
    with pytest.raises(KernelError, match=r"add: repeat_times must be in \[0, 255\], got "
                       r"repeat_times=256"):
        V.add_rep(A.ctx, d, a, b, 64, 256, p, True)
    with pytest.raises(KernelError, match=r"add: mask must be in \[1, 64\], got mask=65"):
        V.add_rep(A.ctx, d, a, b, 65, 1, p, True)
    with pytest.raises(KernelError, match=r"add: mask must be in \[1, 64\], got mask=0"):
        V.add_rep(A.ctx, d, a, b, 0, 1, p, True)
    with pytest.raises(KernelError, match=r"add: mask must select lanes below 64 for 32-bit "
                       r"elements, got mask=\[1, 2\]"):
        V.add_rep(A.ctx, d, a, b, W(1, 2), 1, p, True)
    with pytest.raises(KernelError, match=r"add: dst must hold every element the repeats touch,"
                       r" got index=319 for a tensor of 256 elements"):
        V.add_rep(A.ctx, d, a, b, 64, 5, p, True)
    with pytest.raises(KernelError, match=r"mul: src1 must hold every element the repeats touch"
                       r", got index=263"):
        V.mul_rep(A.ctx, d, a, b, 64, 2, BinaryRepeatParams(src1_rep_stride=25), True)
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


def test_cast_compare_select_brcb_errors():
    A, a, b, d = _tensors()
    m = A.new(64, np.uint8)[0]
    sel16 = A.new(16, np.uint16)[0]
    with pytest.raises(KernelError, match=r"cast: round_mode must be in \[0, 6\], got "
                       r"round_mode=7"):
        V.cast_count(A.ctx, d, a, 7, 8)
    with pytest.raises(KernelError, match=r"compare: cmp_mode must be in \[0, 5\], got "
                       r"cmp_mode=6"):
        V.compare_count(A.ctx, m, a, b, 6, 64)
    with pytest.raises(KernelError, match=r"compare: dst dtype must be uint8 or int8 \(one bit "
                       r"per element\), got dtype=float32"):
        V.compare_count(A.ctx, d, a, b, 0, 64)
    with pytest.raises(KernelError, match=r"compare: dst must hold one bit per compared element"
                       r" \(32 bytes\), got size=4"):
        V.compare_count(A.ctx, m[:4], a, b, 0, 256)
    with pytest.raises(KernelError, match=r"compare_scalar: dst must hold one bit per compared "
                       r"element \(16 bytes\), got size=8"):
        V.compare_scalar_rep(A.ctx, m[:8], a, 1.0, 0, 64, 2, UnaryRepeatParams(), True)
    with pytest.raises(KernelError, match=r"select: sel_mode must be in \[0, 2\], got "
                       r"sel_mode=3"):
        V.select_count(A.ctx, d, sel16, a, b, 3, 64)
    with pytest.raises(KernelError, match=r"select: src1 must be a tensor in sel_mode 0 and 2, "
                       r"got a scalar with sel_mode=2"):
        V.select_count(A.ctx, d, sel16, a, 1.0, 2, 64)
    with pytest.raises(KernelError, match=r"select: src1 must be a scalar in sel_mode 1"):
        V.select_count(A.ctx, d, sel16, a, b, 1, 64)
    with pytest.raises(KernelError, match=r"select: sel_mask must hold 256 bits, got size=8 "
                       r"\(128 bits\)"):
        V.select_count(A.ctx, d, sel16[:8], a, b, 2, 256)
    with pytest.raises(KernelError, match=r"select: sel_mask dtype must be an integer type, got"
                       r" dtype=float32"):
        V.select_count(A.ctx, d, a, a, b, 2, 64)
    p = BrcbRepeatParams()
    with pytest.raises(KernelError, match=r"brcb: dst must not share src0's address"):
        V.brcb(A.ctx, d, d, 1, p)
    with pytest.raises(KernelError, match=r"brcb: src0 must hold count elements, got count=16 "
                       r"for a tensor of 8 elements"):
        V.brcb(A.ctx, d, a[:8], 2, p)
    with pytest.raises(KernelError, match=r"brcb: dst must hold every element the repeats "
                       r"touch, got index=319"):
        V.brcb(A.ctx, d, a, 5, p)


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
