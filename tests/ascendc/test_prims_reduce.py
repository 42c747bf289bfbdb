"""Reduction primitives (ascendc/lang/prims/reduce.py) against numpy references."""
import ml_dtypes
import numpy as np
import pytest
from numba import njit

from ascendc.lang import core
from ascendc.lang.errors import KernelError
from ascendc.lang.prims import reduce as R

F32, F16, BF16 = np.dtype(np.float32), np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16)
FLOATS = [F32, F16, BF16]
TOL = {F32: 1e-6, F16: 1e-3, BF16: 8e-3}
UINT = {2: np.uint16, 4: np.uint32}
from prim_core import Arena  # noqa: E402

ids = str
REF = {"sum": np.sum, "max": np.max, "min": np.min}
ARG = {"max": np.argmax, "min": np.argmin}


def rand(n, dt, seed=0, lo=-8.0, hi=8.0):
    return np.random.default_rng(seed).uniform(lo, hi, n).astype(dt)


def up(x, m):
    return -(-x // m) * m


def need(eb, r1, op, cal_index):
    """Ascend C's minimum sharedTmpBuffer elements, written out as in its documentation."""
    epb, epr = 32 // eb, 256 // eb
    if op == "sum":
        return up(r1, epb)
    it1 = 2 * r1
    if not cal_index:
        return up(it1, epb)
    it2 = -(-it1 // epr) * 2
    n = up(it1, epb) + up(it2, epb)
    if it2 > 2:
        n += up(-(-it2 // epr) * 2, epb)
    return n


def W(w0, w1=0):
    """A bit-mode mask as the registry passes it: a 2-tuple of uint64 words."""
    return np.uint64(w0), np.uint64(w1)


def index_of(dl, k, dt):
    return int(dl[k:k + 1].view(UINT[dt.itemsize])[0])


def vops(ctx):
    return core.read_counters(ctx)["vector_elem_ops"]


def check_value(got, ref, dt):
    np.testing.assert_allclose(float(got), np.asarray(ref, dtype=dt).astype(np.float64),
                               rtol=TOL[dt], atol=TOL[dt])


# ---- reduce_* count form ---------------------------------------------------------------------

@pytest.mark.parametrize("dt", FLOATS, ids=ids)
@pytest.mark.parametrize("op,cal_index", [("sum", False), ("max", False), ("max", True),
                                          ("min", True)], ids=ids)
@pytest.mark.parametrize("count", [1, 37, 1000, 4096], ids=ids)
def test_reduce_count(op, cal_index, dt, count):
    A = Arena()
    xv = rand(4096, dt)
    if op != "sum" and count > 10:
        extreme = 9.5 if op == "max" else -9.5
        xv[count // 3] = xv[count - 2] = extreme          # a tie: the first index wins
    x, _ = A.new(4096, dt, xv)
    n_tmp = need(dt.itemsize, -(-count // (256 // dt.itemsize)), op, cal_index)
    tmp, _ = A.new(n_tmp, dt)                              # exactly Ascend C's minimum
    d, dl = A.new(16, dt, 3)
    args = (A.ctx, d, x, tmp, count) + ((cal_index,) if op != "sum" else ())
    getattr(R, f"reduce_{op}_count")(*args)
    ref_in = xv[:count].astype(np.float64)
    check_value(dl[0], REF[op](ref_in), dt)
    if cal_index:
        assert index_of(dl, 1, dt) == ARG[op](ref_in)
    else:
        assert dl[1] == 3
    assert vops(A.ctx) == count


def test_reduce_sum_long_is_accurate_and_max_propagates_nan():
    A = Arena()
    n = 40000
    xv = rand(n, F32, lo=0, hi=1)
    x, xl = A.new(n, F32, xv)
    tmp, _ = A.new(2048, F32)
    d, dl = A.new(8, F32)
    R.reduce_sum_count(A.ctx, d, x, tmp, n)
    check_value(dl[0], xv.astype(np.float64).sum(), F32)
    xl[123] = np.nan
    xl[999] = np.nan
    R.reduce_max_count(A.ctx, d, x, tmp, n, True)
    assert np.isnan(dl[0]) and index_of(dl, 1, F32) == 123
    R.reduce_min_count(A.ctx, d, x, tmp, 100, True)        # the NaNs are beyond count
    assert dl[0] == xv[:100].min() and index_of(dl, 1, F32) == xv[:100].argmin()
    dl[:] = 5
    R.reduce_max_count(A.ctx, d, x, tmp, 0, True)          # count 0 is a no-op
    assert (dl == 5).all()


def test_reduce_int32_sum_and_max():
    A = Arena()
    xv = np.random.default_rng(3).integers(-1000, 1000, 500).astype(np.int32)
    x, _ = A.new(500, np.int32, xv)
    tmp, _ = A.new(64, np.int32)
    d, dl = A.new(8, np.int32)
    R.reduce_sum_count(A.ctx, d, x, tmp, 500)
    assert dl[0] == xv.sum()
    R.reduce_max_count(A.ctx, d, x, tmp, 500, True)
    assert dl[0] == xv.max() and dl[1] == xv.argmax()


# ---- reduce_* repeat form --------------------------------------------------------------------

def _rep_ref(xv, dt, mask_words, repeat, srs):
    pb, lanes = 32 // dt.itemsize, 256 // dt.itemsize
    w = mask_words[0] | (mask_words[1] << 64)
    idx = [r * srs * pb + j for r in range(repeat) for j in range(lanes) if (w >> j) & 1]
    return np.array(idx)


@pytest.mark.parametrize("dt", [F32, F16], ids=ids)
@pytest.mark.parametrize("op", ["sum", "max", "min"], ids=ids)
def test_reduce_rep(op, dt):
    A = Arena()
    lanes = 256 // dt.itemsize
    xv = rand(40 * lanes, dt, seed=4)
    x, _ = A.new(xv.size, dt, xv)
    d, dl = A.new(16, dt)
    for mask, words, repeat, srs in [(lanes, (2**64 - 1, 2**64 - 1 if lanes == 128 else 0), 5, 8),
                                     (W(0x00FF_0F0F_F0F0_1234, 0x1 if lanes == 128 else 0),
                                      None, 7, 16),
                                     (lanes - 9, None, 300, 1)]:           # repeat_time > 255
        if words is None:
            w = int(mask[0]) | (int(mask[1]) << 64) if isinstance(mask, tuple) else \
                (1 << mask) - 1
            words = (w & (2**64 - 1), w >> 64)
        cal = op != "sum"
        tmp, _ = A.new(need(dt.itemsize, repeat, op, cal), dt)
        args = (A.ctx, d, x, tmp, mask, repeat, srs) + ((True,) if cal else ())
        getattr(R, f"reduce_{op}_rep")(*args)
        idx = _rep_ref(xv, dt, words, repeat, srs)
        vals = xv[idx].astype(np.float64)
        check_value(dl[0], REF[op](vals), dt)
        if cal:
            assert index_of(dl, 1, dt) == idx[ARG[op](vals)]


# ---- the shared tmp buffer rule --------------------------------------------------------------

# (dtype, form, repeat or count, cal_index, elements): the worked examples of Ascend C's ReduceMax
DOC_EXAMPLES = [
    (F16, "rep", 65, True, 176), (F16, "rep", 255, True, 544), (F16, "count", 65408, True, 1056),
    (F16, "rep", 4, True, 32), (F16, "count", 65408, False, 1024), (F32, "rep", 130, True, 288),
]


@pytest.mark.parametrize("dt,form,n,cal,elems", DOC_EXAMPLES, ids=ids)
def test_tmp_buffer_rule_matches_ascend_c_examples(dt, form, n, cal, elems):
    lanes = 256 // dt.itemsize
    r1 = n if form == "rep" else n // lanes
    assert need(dt.itemsize, r1, "max", cal) == elems
    A = Arena()
    size = n * lanes if form == "rep" else n
    x, _ = A.new(size, dt, 1)
    d, _ = A.new(16, dt)
    tmp, _ = A.new(elems, dt)
    call = (lambda t: R.reduce_max_rep(A.ctx, d, x, t, lanes, n, 8, cal)) if form == "rep" \
        else (lambda t: R.reduce_max_count(A.ctx, d, x, t, n, cal))
    call(tmp)                                               # the minimum passes
    with pytest.raises(KernelError, match=rf"reduce_max: shared_tmp_buffer must hold at least "
                       rf"{elems} elements \({elems * dt.itemsize} bytes, Ascend C's minimum "
                       rf"workLocal size\), got size={elems - 1}"):
        call(tmp[:elems - 1])


def test_reduce_sum_tmp_rule():
    A = Arena()
    x, _ = A.new(1000, F32, 1)
    d, dl = A.new(8, F32)
    tmp, _ = A.new(16, F32)               # ceil(1000/64) = 16 repeats -> up(16, 8) = 16
    R.reduce_sum_count(A.ctx, d, x, tmp, 1000)
    assert dl[0] == 1000
    with pytest.raises(KernelError, match=r"reduce_sum: shared_tmp_buffer must hold at least 16"
                       r" elements \(64 bytes"):
        R.reduce_sum_count(A.ctx, d, x, tmp[:15], 1000)
    with pytest.raises(KernelError, match=r"reduce_sum: shared_tmp_buffer must hold at least 8 "
                       r"elements"):
        R.reduce_sum_rep(A.ctx, d, x, tmp[:7], 64, 3, 8)


def test_checked_mode_clobbers_tmp_buffer():
    A = Arena(core.FLAG_NAN_FILL)
    x, _ = A.new(640, F32, rand(640, F32))
    tmp, tl = A.new(64, F32, 0)
    d, _ = A.new(8, F32)
    R.reduce_max_count(A.ctx, d, x, tmp, 640, True)
    n = need(4, 10, "max", True)
    assert np.isnan(tl[:n]).all() and (tl[n:] == 0).all()


# ---- reduce errors ---------------------------------------------------------------------------

def test_reduce_errors():
    A = Arena()
    x, _ = A.new(256, F32, 1)
    tmp, _ = A.new(64, F32)
    d, _ = A.new(8, F32)
    h, _ = A.new(70000, F16)
    th, _ = A.new(4096, F16)
    dh, _ = A.new(16, F16)
    with pytest.raises(KernelError, match=r"reduce_sum: src must hold count elements, got "
                       r"count=300 for a tensor of 256 elements in UB"):
        R.reduce_sum_count(A.ctx, d, x, tmp, 300)
    with pytest.raises(KernelError, match=r"reduce_max: dst must hold 2 elements \(the result "
                       r"and its index\), got size=1"):
        R.reduce_max_count(A.ctx, d[:1], x, tmp, 100, True)
    with pytest.raises(KernelError, match=r"reduce_min: shared_tmp_buffer dtype must equal "
                       r"dst's \(float32\), got dtype=float16"):
        R.reduce_min_count(A.ctx, d, x, th, 100, False)
    with pytest.raises(KernelError, match=r"reduce_max: indices must fit in uint16 for 16-bit "
                       r"dtypes when cal_index=True \(Ascend C limit\), got last index=65536"):
        R.reduce_max_count(A.ctx, dh, h, th, 65537, True)
    R.reduce_max_count(A.ctx, dh, h, th, 65537, False)     # fine without the index
    # past src's end runs inside UB (test_rep_forms_reach_past_the_tensor_inside_ub); past
    # UB's capacity it traps: 2 repeats 65535 blocks apart reach element 65535 * 8 + 63
    ub = int(core.state(A.ctx).level_size[core.UB])
    with pytest.raises(KernelError, match=rf"reduce_max: src must stay inside UB, got "
                       rf"index=524343 for a tensor at UB byte 0 \({ub} bytes of UB\)"):
        R.reduce_max_rep(A.ctx, d, x, tmp, 64, 2, 65535, False)
    with pytest.raises(KernelError, match=r"reduce_sum: src_rep_stride must be in \[0, 65535\], "
                       r"got src_rep_stride=-8"):
        R.reduce_sum_rep(A.ctx, d, x, tmp, 64, 2, -8)
    with pytest.raises(KernelError, match=r"reduce_min: mask must be in \[1, 64\], got mask=65"):
        R.reduce_min_rep(A.ctx, d, x, tmp, 65, 1, 8, False)


# ---- whole_reduce ----------------------------------------------------------------------------

@pytest.mark.parametrize("dt", [F32, F16, BF16], ids=ids)
def test_whole_reduce_sum(dt):
    A = Arena()
    lanes, pb = 256 // dt.itemsize, 32 // dt.itemsize
    xv = rand(8 * lanes, dt, seed=5)
    x, _ = A.new(xv.size, dt, xv)
    d, dl = A.new(16, dt, 7)
    R.whole_reduce_sum(A.ctx, d, x, lanes - 1, 3, 2, 2, 16, True)
    for r in range(3):
        idx = [r * 16 * pb + (j // pb) * 2 * pb + j % pb for j in range(lanes - 1)]
        check_value(dl[2 * r], xv[idx].astype(np.float64).sum(), dt)
        assert dl[2 * r + 1] == 7
    assert vops(A.ctx) == 3 * (lanes - 1)


@pytest.mark.parametrize("dt", [F32, F16], ids=ids)
@pytest.mark.parametrize("op", ["max", "min"], ids=ids)
@pytest.mark.parametrize("order", [0, 1, 2, 3], ids=ids)
def test_whole_reduce_max_min(op, order, dt):
    A = Arena()
    lanes = 256 // dt.itemsize
    xv = rand(4 * lanes, dt, seed=6)
    xv[lanes + 5] = xv[lanes + 40] = 9.0 if op == "max" else -9.0     # tie in repeat 1
    x, _ = A.new(xv.size, dt, xv)
    d, dl = A.new(32, dt, 0)
    mask = W(0xFFFF_FFFF_FFFF_FFF7, 0xF if lanes == 128 else 0)
    getattr(R, f"whole_reduce_{op}")(A.ctx, d, x, mask, 3, 2, 1, 8, order, True)
    w = int(mask[0]) | (int(mask[1]) << 64)
    lanes_sel = [j for j in range(lanes) if (w >> j) & 1]
    unit = {0: 2, 1: 2, 2: 1, 3: 4 // dt.itemsize}[order]
    for r in range(3):
        vals = xv[[r * lanes + j for j in lanes_sel]].astype(np.float64)
        k = int(ARG[op](vals))
        base = r * 2 * unit
        if order == 0:
            assert dl[base] == np.asarray(vals[k], dt) and index_of(dl, base + 1, dt) == \
                lanes_sel[k]
        elif order == 1:
            assert index_of(dl, base, dt) == lanes_sel[k] and dl[base + 1] == \
                np.asarray(vals[k], dt)
        elif order == 2:
            assert dl[base] == np.asarray(vals[k], dt)
        else:
            assert int(dl[base:base + unit].view(np.uint32)[0]) == lanes_sel[k]
    if order == 0:
        assert index_of(dl, 2 * 2 + 1, dt) == 5                  # first of the tied lanes


def test_whole_reduce_errors():
    A = Arena()
    x, _ = A.new(256, F32, 1)
    d, _ = A.new(8, F32)
    g, _ = A.new(64, np.float64)
    with pytest.raises(KernelError, match=r"whole_reduce_max: order must be in \[0, 3\], got "
                       r"order=4"):
        R.whole_reduce_max(A.ctx, d, x, 64, 1, 1, 1, 8, 4, True)
    # past a tensor's end runs inside UB (test_rep_forms_reach_past_the_tensor_inside_ub);
    # past UB's capacity it traps
    ub = int(core.state(A.ctx).level_size[core.UB])
    with pytest.raises(KernelError, match=rf"whole_reduce_min: dst must stay inside UB, got "
                       rf"index=131071 for a tensor at UB byte 1024 \({ub} bytes of UB\)"):
        R.whole_reduce_min(A.ctx, d, x, 64, 2, 65535, 1, 8, 0, True)   # 65535 * 2 + 1
    with pytest.raises(KernelError, match=r"whole_reduce_sum: repeat_time must be in \[0, 255\]"
                       r", got repeat_time=256"):
        R.whole_reduce_sum(A.ctx, d, x, 64, 256, 1, 1, 8, True)
    with pytest.raises(KernelError, match=rf"whole_reduce_sum: src must stay inside UB, got "
                       rf"index=524343 for a tensor at UB byte 0 \({ub} bytes of UB\)"):
        R.whole_reduce_sum(A.ctx, d, x, 64, 2, 1, 1, 65535, True)     # 65535 * 8 + 63
    with pytest.raises(KernelError, match=r"whole_reduce_max: dst dtype must be 16- or 32-bit "
                       r"for ORDER_ONLY_INDEX"):
        R.whole_reduce_max(A.ctx, g, g, 32, 1, 1, 1, 8, 3, True)


def test_rep_forms_reach_past_the_tensor_inside_ub():
    # as on the NPU, a repeat form reaching past its tensor's end but inside UB runs: reads see
    # the UB after src, writes land in the UB after dst; checked mode says so
    A = Arena(core.FLAG_NAN_FILL)
    xv = rand(320, F32, seed=21)
    xv[300] = 50.0                                          # the max lies past x's 256
    xfull, _ = A.new(320, F32, xv)                          # UB bytes [0, 1280)
    x = xfull[:256]
    tmp, _ = A.new(64, F32)
    d, dl = A.new(8, F32)
    with pytest.warns(RuntimeWarning, match=r"reduce_max: src is read/written past its 256 "
                      r"elements \(up to index=319, UB byte 1280\); allowed inside UB as on "
                      r"the NPU"):
        R.reduce_max_rep(A.ctx, d, x, tmp, 64, 5, 8, True)
    assert dl[0] == 50.0 and index_of(dl, 1, F32) == 300
    wfull, wl = A.new(16, F32, 0)       # UB byte 1568: a dst of 8, then its neighbour
    with pytest.warns(RuntimeWarning, match=r"whole_reduce_sum: src is read/written past its "
                      r"256 elements \(up to index=319, UB byte 1280\); allowed inside UB as "
                      r"on the NPU"):
        R.whole_reduce_sum(A.ctx, wfull[:8], x, 64, 2, 1, 1, 32, True)
    check_value(wl[0], xv[:64].astype(np.float64).sum(), F32)
    check_value(wl[1], xv[256:].astype(np.float64).sum(), F32)      # repeat 1 at element 256
    assert not wl[2:].any()
    wl[:] = 0
    with pytest.warns(RuntimeWarning, match=r"whole_reduce_min: dst is read/written past its 8 "
                      r"elements \(up to index=9, UB byte 1608\); allowed inside UB as on the "
                      r"NPU"):
        R.whole_reduce_min(A.ctx, wfull[:8], x, 64, 3, 2, 1, 8, 0, True)
    for r in range(3):                                      # (value, index) at 4r, 4r + 1
        k = int(np.argmin(xv[64 * r:64 * r + 64]))
        assert wl[4 * r] == xv[64 * r + k] and index_of(wl, 4 * r + 1, F32) == k
    assert not wl[[2, 3, 6, 7]].any() and not wl[10:].any()


# ---- from nopython code ----------------------------------------------------------------------

@njit
def _njit_reduce(ctx, d, x, tmp):
    m = (np.uint64(0xFFFF), np.uint64(0))
    R.reduce_sum_count(ctx, d, x, tmp, 100)
    s = d[0]
    R.reduce_sum_rep(ctx, d, x, tmp, 64, 2, 8)
    R.reduce_max_count(ctx, d, x, tmp, 100, True)
    R.reduce_max_rep(ctx, d, x, tmp, m, 2, 8, True)
    R.reduce_min_count(ctx, d, x, tmp, 100, False)
    R.reduce_min_rep(ctx, d, x, tmp, 64, 2, 8, True)
    R.whole_reduce_sum(ctx, d, x, 64, 2, 1, 1, 8, True)
    R.whole_reduce_min(ctx, d, x, m, 2, 1, 1, 8, 2, True)
    R.whole_reduce_max(ctx, d, x, 64, 2, 1, 1, 8, 0, True)
    return s


def test_reduce_in_njit():
    A = Arena()
    xv = rand(256, F32, seed=9)
    x, _ = A.new(256, F32, xv)
    tmp, _ = A.new(64, F32)
    d, dl = A.new(8, F32)
    s = _njit_reduce(A.ctx, d, x, tmp)
    check_value(s, xv[:100].astype(np.float64).sum(), F32)
    assert dl[0] == xv[:64].max() and int(dl[1:2].view(np.uint32)[0]) == xv[:64].argmax()
    assert dl[2] == xv[64:128].max()
