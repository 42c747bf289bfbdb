"""Reach of the vector repeat forms (mask + repeat_times + repeat params), as on the NPU: a
repeat form addresses UB directly, so its only bound is UB's capacity (past it: a trap), not the
size of the LocalTensor it starts at. pyasc's generalization/basic/test_vadd_bits adds 128
float16 lanes over 64-element tiles: the reads run on into the next buffer and the writes land
in the buffer after dst (checked mode warns, naming the api, the operand and how far it went).
Also: the "mask[1] ignored" warning of 32-bit elements belongs to checked mode only."""
import warnings

import numpy as np
import pytest

import ascendc as asc
import rt
from ascendc.lang import core
from ascendc.lang.params import BinaryRepeatParams, UnaryRepeatParams, BrcbRepeatParams
from ascendc.lang.prims import reduce as R
from ascendc.lang.prims import vector as V
from prim_core import Arena


@asc.jit
def add_reach_kernel(x: asc.GlobalAddress, y: asc.GlobalAddress, z: asc.GlobalAddress,
                     tile: asc.ConstExpr[int], pad: int, lanes: int, repeat: int, rep: int):
    """Two tiles per queue, back to back in UB (after `pad` bytes of a TBuf); the add starts at
    tile 0 of each queue and, with a 128-lane mask over 64-element tiles, reaches tile 1."""
    xg = asc.GlobalTensor()
    yg = asc.GlobalTensor()
    zg = asc.GlobalTensor()
    xg.set_global_buffer(x)
    yg.set_global_buffer(y)
    zg.set_global_buffer(z)
    pipe = asc.TPipe()
    padb = asc.TBuf(asc.TPosition.VECCALC)
    qx = asc.TQue(asc.TPosition.VECIN, 2)
    qy = asc.TQue(asc.TPosition.VECIN, 2)
    qz = asc.TQue(asc.TPosition.VECOUT, 2)
    pipe.init_buffer(buf=padb, num=pad)
    pipe.init_buffer(que=qx, num=2, len=tile * x.dtype.sizeof())
    pipe.init_buffer(que=qy, num=2, len=tile * y.dtype.sizeof())
    pipe.init_buffer(que=qz, num=2, len=tile * z.dtype.sizeof())
    x0 = qx.alloc_tensor(x.dtype)
    x1 = qx.alloc_tensor(x.dtype)
    y0 = qy.alloc_tensor(y.dtype)
    y1 = qy.alloc_tensor(y.dtype)
    asc.data_copy(x0, xg, count=tile)
    asc.data_copy(x1, xg[tile:], count=tile)
    asc.data_copy(y0, yg, count=tile)
    asc.data_copy(y1, yg[tile:], count=tile)
    qx.enque(x0)
    qx.enque(x1)
    qy.enque(y0)
    qy.enque(y1)
    x0 = qx.deque(x.dtype)
    x1 = qx.deque(x.dtype)
    y0 = qy.deque(y.dtype)
    y1 = qy.deque(y.dtype)
    z0 = qz.alloc_tensor(z.dtype)
    z1 = qz.alloc_tensor(z.dtype)
    asc.add(z0, x0, y0, mask=lanes, repeat_times=repeat,
            repeat_params=asc.BinaryRepeatParams(1, 1, 1, rep, rep, rep))
    qz.enque(z0)
    qz.enque(z1)
    z0 = qz.deque(z.dtype)
    z1 = qz.deque(z.dtype)
    asc.data_copy(zg, z0, count=tile)
    asc.data_copy(zg[tile:], z1, count=tile)
    qz.free_tensor(z0)
    qz.free_tensor(z1)
    qx.free_tensor(x0)
    qx.free_tensor(x1)
    qy.free_tensor(y0)
    qy.free_tensor(y1)


TILE = 64


def _inputs(dtype, seed):
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind == "f":
        return (rng.uniform(-4, 4, 2 * TILE).astype(dtype),
                rng.uniform(-4, 4, 2 * TILE).astype(dtype))
    return (rng.integers(-100, 99, 2 * TILE).astype(dtype),
            rng.integers(-100, 99, 2 * TILE).astype(dtype))


def _reach_warnings(rec):
    return [str(w.message) for w in rec if "allowed inside UB" in str(w.message)]


# (mode, dtype, checked, pad): distinct pads give distinct UB offsets, so each checked case's
# warnings are new to the process (a kernel warning is reported once per distinct message)
REACH_CASES = [
    ("interpret", np.float16, True, 32),
    ("interpret", np.int16, False, 64),
    ("compiled", np.int16, True, 96),
    ("compiled", np.float16, False, 128),
]


@pytest.mark.parametrize("mode, dtype, checked, pad", REACH_CASES)
def test_16_bit_add_reaches_the_next_buffer_as_on_the_npu(mode, dtype, checked, pad):
    x, y = _inputs(dtype, pad)
    z = np.zeros(2 * TILE, dtype)
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        add_reach_kernel[1](x, y, z, TILE, pad, 128, 1, 8,
                            interpret=(mode == "interpret"), checked=checked)
    # lanes 64..127 read tile 1 of x and y and write tile 1 of z: the whole sum, as on the NPU
    np.testing.assert_array_equal(z, (x + y).astype(dtype))
    got = _reach_warnings(rec)
    if not checked:
        assert got == []
        return
    eb = np.dtype(dtype).itemsize
    qbytes = 2 * TILE * eb                      # one queue's two tiles
    ends = {"src0": pad + TILE * 2 * eb, "src1": pad + qbytes + TILE * 2 * eb,
            "dst": pad + 2 * qbytes + TILE * 2 * eb}
    for what, end in ends.items():
        want = (f"add: {what} is read/written past its {TILE} elements (up to index=127, "
                f"UB byte {end}); allowed inside UB as on the NPU")
        assert any(want in m for m in got), (want, got)


@pytest.mark.parametrize("mode", ["interpret", "compiled"])
def test_a_repeat_reaching_past_ub_traps(mode):
    dtype = np.float16              # the kernels specialised above (interpret-float16-True-32,
    checked = mode == "interpret"   # compiled-float16-False-128)
    pad = 32 if checked else 128
    x, y = _inputs(dtype, 1)
    z = np.zeros(2 * TILE, dtype)
    # 255 repeats 255 blocks apart: element 254 * 255 * 16 + 127 lies ~2 MB past dst
    far = 254 * 255 * 16 + 127
    dst_byte = pad + 4 * TILE * 2
    with pytest.raises(rt.AclError, match=rf"add: dst must stay inside UB, got index={far} for "
                                          rf"a tensor at UB byte {dst_byte} \(\d+ bytes of UB\)"):
        add_reach_kernel[1](x, y, z, TILE, pad, 128, 255, 255,
                            interpret=(mode == "interpret"), checked=checked)


@asc.jit
def add_mask_kernel(x: asc.GlobalAddress, y: asc.GlobalAddress, z: asc.GlobalAddress,
                    n: asc.ConstExpr[int], m0: int, m1: int):
    xg = asc.GlobalTensor()
    yg = asc.GlobalTensor()
    zg = asc.GlobalTensor()
    xg.set_global_buffer(x)
    yg.set_global_buffer(y)
    zg.set_global_buffer(z)
    pipe = asc.TPipe()
    qx = asc.TQue(asc.TPosition.VECIN, 1)
    qy = asc.TQue(asc.TPosition.VECIN, 1)
    qz = asc.TQue(asc.TPosition.VECOUT, 1)
    pipe.init_buffer(que=qx, num=1, len=n * x.dtype.sizeof())
    pipe.init_buffer(que=qy, num=1, len=n * y.dtype.sizeof())
    pipe.init_buffer(que=qz, num=1, len=n * z.dtype.sizeof())
    xl = qx.alloc_tensor(x.dtype)
    yl = qy.alloc_tensor(y.dtype)
    asc.data_copy(xl, xg, count=n)
    asc.data_copy(yl, yg, count=n)
    qx.enque(xl)
    qy.enque(yl)
    xl = qx.deque(x.dtype)
    yl = qy.deque(y.dtype)
    zl = qz.alloc_tensor(z.dtype)
    asc.duplicate(zl, 0.0, n)
    asc.add(zl, xl, yl, mask=[m0, m1], repeat_times=1,
            repeat_params=asc.BinaryRepeatParams(1, 1, 1, 8, 8, 8))
    qz.enque(zl)
    zl = qz.deque(z.dtype)
    asc.data_copy(zg, zl, count=n)
    qz.free_tensor(zl)
    qx.free_tensor(xl)
    qy.free_tensor(yl)


@pytest.mark.parametrize("mode, checked, m1", [("interpret", True, 1001),
                                               ("interpret", False, 1002),
                                               ("compiled", True, 1003),
                                               ("compiled", False, 1004)])
def test_mask_high_word_warning_is_checked_mode_only(mode, checked, m1):
    rng = np.random.default_rng(m1)
    x = rng.uniform(-4, 4, 64).astype(np.float32)
    y = rng.uniform(-4, 4, 64).astype(np.float32)
    z = np.full(64, 7, np.float32)
    m0 = 0b1011 | (1 << 40)
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        add_mask_kernel[1](x, y, z, 64, np.int64(m0), m1, interpret=(mode == "interpret"),
                           checked=checked)
    exp = np.zeros(64, np.float32)
    on = [0, 1, 3, 40]                          # mask[0]'s lanes; mask[1] is not read
    exp[on] = x[on] + y[on]
    np.testing.assert_array_equal(z, exp)
    got = [str(w.message) for w in rec if "mask[1]" in str(w.message)]
    if checked:
        assert got == [f"add: mask[1] is ignored for 32-bit elements (64 lanes), got "
                       f"mask[1]={m1}"], got
    else:
        assert got == []


# ---- the other repeat forms, on a core's UB directly (the primitives both modes run) ----------

def _pair(A, n, dt, seed, fill=None):
    """Tensor t of n elements and the UB right after it (its neighbour, n more elements): one
    allocation of 2n elements, t its first half. (t, logical view of both halves, (t's logical
    view, the neighbour's))."""
    vals = (np.random.default_rng(seed).uniform(-4, 4, 2 * n).astype(dt) if fill is None
            else fill)
    full, fl = A.new(2 * n, dt, vals)
    return full[:n], fl, (fl[:n], fl[n:])


def test_unary_scalar_axpy_cast_reach_the_next_buffer():
    A = Arena(core.FLAG_NAN_FILL)       # checked mode: each reach is reported
    s, sv, _ = _pair(A, 32, np.float32, 1)          # UB bytes [0, 256)
    d, _, (dl, dn) = _pair(A, 32, np.float32, 3, fill=0)     # [256, 512)
    h, _, (hl, hn) = _pair(A, 32, np.float16, 5, fill=0)     # [512, 640)
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        V.abs_rep(A.ctx, d, s, 64, 1, UnaryRepeatParams(), True)
        np.testing.assert_array_equal(np.concatenate([dl, dn]), np.abs(sv))
        V.adds_rep(A.ctx, d, s, 2.0, 64, 1, UnaryRepeatParams(), True)
        np.testing.assert_array_equal(np.concatenate([dl, dn]), sv + np.float32(2))
        V.axpy_rep(A.ctx, d, s, 0.5, 64, 1, UnaryRepeatParams(), True)
        np.testing.assert_allclose(np.concatenate([dl, dn]), sv + np.float32(2) + sv * 0.5,
                                   rtol=1e-6)
        V.cast_rep(A.ctx, h, s, 1, 64, 1, UnaryRepeatParams(dst_rep_stride=4), True)  # RINT
        np.testing.assert_array_equal(np.concatenate([hl, hn]), sv.astype(np.float16))
    got = _reach_warnings(rec)
    for api in ("abs", "adds", "axpy", "cast"):
        src = (f"{api}: src is read/written past its 32 elements (up to index=63, UB byte "
               f"256); allowed inside UB as on the NPU")
        dst = (f"{api}: dst is read/written past its 32 elements (up to index=63, UB byte "
               f"{640 if api == 'cast' else 512}); allowed inside UB as on the NPU")
        assert src in got and dst in got, (api, got)


def test_duplicate_brcb_compare_select_reach_the_next_buffer():
    A = Arena()                         # unchecked: the same results, silently
    # recorded, not an "error" filter: a warning raised inside a compiled primitive would be
    # printed and ignored by Numba, not raised
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        d, _, (dl, dn) = _pair(A, 32, np.float32, 1, fill=0)
        V.duplicate_rep(A.ctx, d, 3.0, 64, 1, 1, 8, True)
        np.testing.assert_array_equal(np.concatenate([dl, dn]), np.full(64, 3, np.float32))
        src, _ = A.new(8, np.float32, np.arange(8, dtype=np.float32))
        V.brcb(A.ctx, d, src, 1, BrcbRepeatParams(1, 8))      # 8 blocks of 8: 64 elements
        np.testing.assert_array_equal(np.concatenate([dl, dn]), np.repeat(np.arange(8), 8))
        a, av, _ = _pair(A, 32, np.float32, 7)
        b, bv, _ = _pair(A, 32, np.float32, 9)
        bits, _, (bl, bn) = _pair(A, 4, np.uint8, 0, fill=0)    # 8 bytes: one repeat's bits
        V.compare_rep(A.ctx, bits, a, b, 0, 64, 1, BinaryRepeatParams(), True)   # LT
        np.testing.assert_array_equal(np.concatenate([bl, bn]), np.packbits(av < bv,
                                                                            bitorder="little"))
        V.select_rep(A.ctx, d, bits, a, b, 2, 64, 1, BinaryRepeatParams(), True)
        np.testing.assert_array_equal(np.concatenate([dl, dn]), np.where(av < bv, av, bv))
    assert _reach_warnings(caught) == [], _reach_warnings(caught)


def test_reduce_forms_reach_the_next_buffer():
    A = Arena()
    s, sv, _ = _pair(A, 32, np.float32, 11)
    tmp, _ = A.new(64, np.float32)
    d, dv = A.new(8, np.float32)
    R.reduce_sum_rep(A.ctx, d, s, tmp, 64, 1, 8)
    np.testing.assert_allclose(dv[0], sv.sum(dtype=np.float64), rtol=1e-6)
    R.reduce_max_rep(A.ctx, d, s, tmp, 64, 1, 8, True)
    assert dv[0] == sv.max() and dv[1:2].view(np.uint32)[0] == np.argmax(sv)
    wfull, got = A.new(16, np.float32, 0)
    w = wfull[:1]                                         # a 1-element dst; results at 0 and 8
    R.whole_reduce_sum(A.ctx, w, s, 32, 2, 8, 1, 4, True)    # repeat r: s[32r:32r+32]
    np.testing.assert_allclose(got[[0, 8]], [sv[:32].sum(), sv[32:].sum()], rtol=1e-6)
    assert not got[1:8].any() and not got[9:].any()
