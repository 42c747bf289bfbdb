"""`cubegemm.borrowed`: primitives pass reference-free views of their arrays (no atomic
refcounting per call). The views must hold the same data, shape and strides, be usable for
writes, and the primitives built on them must still compute and check as before."""
import numpy as np
import pytest
from numba import njit

import rt
from ascendc.lang import core
from ascendc.lang.errors import KernelError
from ascendc.lang.params import LoadData2DParams
from ascendc.lang.prims.cube import load_data
from ascendc.lang.prims.borrow import borrowed, retyped
from ascendc.lang.prims.datacopy import data_copy
from ascendc.lang.dtypes import BF16_STORAGE
from ascendc.lang.state import MEM


@njit
def _borrow_and_write(t, a):
    b = borrowed(a)[3:]             # a view of a borrowed view
    b[0] = 7.0
    c = borrowed(t)                 # a tuple: each array borrowed
    c[1][0] = 5
    return b.size, b.strides[0], c[0].sum(), borrowed(t[0]).shape[0]


def test_borrowed_views_share_data_shape_and_strides():
    a = np.arange(10, dtype=np.float32)
    t = (np.ones(4, np.int64), np.zeros(2, np.int64), 3.5)
    n, stride, total, rows = _borrow_and_write(t, a)
    assert (n, stride, total, rows) == (7, 4, 4, 4)
    assert a[3] == 7.0 and t[1][0] == 5


def test_borrowed_is_identity_in_python():
    a = np.zeros(3)
    assert borrowed(a) is a


def _core():
    ctx = core.new_ctx(rt.get_soc())
    mem = ctx[MEM]

    def local(level, n, off=0):
        base = int(core.state(ctx).level_base[level]) + off
        return mem[base:base + n * 4].view(np.float32)
    return ctx, local


@njit
def _gm_l1_l0a(ctx, g, l1, l0a, n):
    for _ in range(n):                       # many calls: reference counts stay balanced
        data_copy(ctx, l1, g, 256)
        load_data(ctx, l0a, l1, LoadData2DParams(0, 2, 1, 0, 0, False, 0))


def test_copies_through_borrowed_views_match_numpy_and_keep_checks():
    ctx, local = _core()
    g = np.random.default_rng(1).random(256).astype(np.float32)
    core.register_gm(ctx, g)
    l1, l0a = local(core.L1, 256), local(core.L0A, 256)
    _gm_l1_l0a(ctx, g, l1, l0a, 1000)
    np.testing.assert_array_equal(l1, g)
    np.testing.assert_array_equal(l0a, g)
    with pytest.raises(KernelError, match="load_data: dst address in L0A must be 512-byte "
                                          "aligned, got byte offset=32"):
        _gm_l1_l0a(ctx, g, l1, local(core.L0A, 256, 32), 1)


BF16_T = BF16_STORAGE            # bfloat16 as compiled code stores it: a record over uint16


@njit
def _retype_all(a, b):
    u8 = retyped(a, np.uint8)
    u8[0] = 0xFF                                    # writes reach a
    return (u8, retyped(a[1:], np.uint16), retyped(retyped(a, np.uint8), np.float64),
            retyped(borrowed(a), np.int32), retyped(b, BF16_T))


def test_retyped_is_view_with_the_same_bytes_shape_and_strides():
    a = np.arange(1, 9, dtype=np.float32)
    b = np.arange(6, dtype=np.uint16)
    want = [a.view(np.uint8).copy(), a[1:].view(np.uint16), a.view(np.float64),
            a.view(np.int32), b.view(BF16_T)]
    want[0][0] = 0xFF
    got = _retype_all(a, b)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape and g.strides == w.strides
        assert np.array_equal(g.view(np.uint8), w.view(np.uint8))
    assert a.view(np.uint8)[0] == 0xFF
    assert retyped(a, np.uint8).base is a            # Python: numpy's own view


@njit
def _retype_odd(a):
    return retyped(a, np.uint32)


def test_retyped_rejects_a_length_the_dtype_does_not_divide_like_view():
    a = np.zeros(3, np.uint16)
    with pytest.raises(ValueError, match="its size must be a divisor of the total size"):
        _retype_odd(a)
    with pytest.raises(ValueError, match="its size must be a divisor of the total size"):
        a.view(np.uint32)
