"""Cast, compare and select primitives (ascendc/lang/prims/cast.py, compare.py) against numpy
references, and their error messages."""
import numpy as np
import pytest

from ascendc.lang import core
from ascendc.lang.errors import KernelError
from ascendc.lang.params import BinaryRepeatParams, BrcbRepeatParams, UnaryRepeatParams
from ascendc.lang.prims import vector as V
from vec_helpers import (BF16, F16, F32, I16, I32, Arena, W, ids,
                         isf, mask_to_words, rand, rep_lanes, tensors, wide)


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
    x = wide(sv)
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



def test_cast_compare_select_brcb_errors():
    A, a, b, d = tensors()
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
    # past a tensor's end runs inside UB (test_rep_forms_reach_past_the_tensor_inside_ub); past
    # UB's capacity it traps: bits 8 bytes before UB's end, 2 repeats write 16 bytes
    ub = int(core.state(A.ctx).level_size[core.UB])
    E = Arena()
    ea = E.new(128, F32)[0]
    E.off = ub - 8
    last8 = E.new(8, np.uint8)[0]
    with pytest.raises(KernelError, match=rf"compare_scalar: dst must stay inside UB, got "
                       rf"index=15 for a tensor at UB byte {ub - 8} \({ub} bytes of UB\)"):
        V.compare_scalar_rep(E.ctx, last8, ea, 1.0, 0, 64, 2, UnaryRepeatParams(), True)
    V.compare_scalar_rep(E.ctx, last8, ea, 1.0, 0, 64, 1, UnaryRepeatParams(), True)  # fits
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
    with pytest.raises(KernelError, match=rf"brcb: dst must stay inside UB, got index=524343 "
                       rf"for a tensor at UB byte 2048 \({ub} bytes of UB\)"):
        V.brcb(A.ctx, d, a, 2, BrcbRepeatParams(1, 65535))      # 65535 * 8 + 63


def test_rep_forms_reach_past_the_tensor_inside_ub():
    # as on the NPU, a repeat form reaching past its tensor's end but inside UB runs: writes
    # land in the UB after dst; checked mode says so
    A = Arena(core.FLAG_NAN_FILL)
    av = rand(128, F32, seed=31)
    a, _ = A.new(128, F32, av)                          # UB bytes [0, 512)
    mfull, ml = A.new(16, np.uint8, 0)                  # [512, 528): bits of 8 bytes, then more
    with pytest.warns(RuntimeWarning, match=r"compare_scalar: dst is read/written past its 8 "
                      r"elements \(up to index=15, UB byte 528\); allowed inside UB as on the "
                      r"NPU"):
        V.compare_scalar_rep(A.ctx, mfull[:8], a, 1.0, 0, 64, 2, UnaryRepeatParams(), True)
    np.testing.assert_array_equal(ml, np.packbits(av < 1.0, bitorder="little"))   # LT
    src, _ = A.new(40, F32, av[:40])                    # [544, 704)
    dfull, dl = A.new(320, F32, 0)                      # [704, 1984): dst is its first 256
    with pytest.warns(RuntimeWarning, match=r"brcb: dst is read/written past its 256 elements "
                      r"\(up to index=319, UB byte 1984\); allowed inside UB as on the NPU"):
        V.brcb(A.ctx, dfull[:256], src, 5, BrcbRepeatParams())
    np.testing.assert_array_equal(dl, np.repeat(av[:40], 8))


