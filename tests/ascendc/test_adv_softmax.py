"""asc.adv.softmax / asc.adv.SoftmaxTiling with asc.ShapeInfo, asc.array and
LocalTensor.set_shape_info (pyasc kernels/insert_sync/test_softmax.py without LocalTensorAuto),
in both modes. Reference: Ascend C's SoftMax per row in float32 (ascendc/lang/prims/softmax.py):
max over the original columns, exp(x - max) over all k columns, sum over the original columns,
divide; sum / max as one 32-byte block per row."""
import numpy as np
import pytest

import ascendc as asc

MODES = ["interpret", "compiled"]


@asc.jit
def softmax_kernel(src: asc.GlobalAddress, dst: asc.GlobalAddress, sum_out: asc.GlobalAddress,
                   max_out: asc.GlobalAddress, tiling: asc.adv.SoftmaxTiling,
                   m: int, k: int, om: int, ok: int, tmp_bytes: int, host_tiling: bool,
                   set_shape: bool, nz: bool):
    # run-time parameters: one compiled specialisation per dtype signature
    sg = asc.GlobalTensor()
    dg = asc.GlobalTensor()
    sumg = asc.GlobalTensor()
    maxg = asc.GlobalTensor()
    sg.set_global_buffer(src)
    dg.set_global_buffer(dst)
    sumg.set_global_buffer(sum_out)
    maxg.set_global_buffer(max_out)
    blk = 32 // sum_out.dtype.sizeof()
    pipe = asc.TPipe()
    qin = asc.TQue(asc.TPosition.VECIN, 1)
    qout = asc.TQue(asc.TPosition.VECOUT, 1)
    qsum = asc.TQue(asc.TPosition.VECOUT, 1)
    qmax = asc.TQue(asc.TPosition.VECOUT, 1)
    pipe.init_buffer(que=qin, num=1, len=m * k * src.dtype.sizeof())
    pipe.init_buffer(que=qout, num=1, len=m * k * dst.dtype.sizeof())
    pipe.init_buffer(que=qsum, num=1, len=m * 32)
    pipe.init_buffer(que=qmax, num=1, len=m * 32)
    s = qin.alloc_tensor(src.dtype)
    asc.data_copy(s, sg, count=m * k)
    qin.enque(s)
    s = qin.deque(src.dtype)
    d = qout.alloc_tensor(dst.dtype)
    sm = qsum.alloc_tensor(sum_out.dtype)
    mx = qmax.alloc_tensor(max_out.dtype)
    if set_shape:
        s.set_shape_info(asc.ShapeInfo(asc.array(asc.int32, (m, k)),
                                       asc.array(asc.int32, (om, ok))))
    t = asc.adv.SoftmaxTiling()
    if host_tiling:
        t = tiling
    if tmp_bytes > 0:
        tbuf = asc.TBuf(asc.TPosition.VECCALC)
        pipe.init_buffer(buf=tbuf, num=tmp_bytes)
        tmp = tbuf.get(asc.uint8)
        asc.adv.softmax(d, sm, mx, s, t, tmp, data_format_nz=nz)
    else:
        asc.adv.softmax(d, sm, mx, s, t)
    qout.enque(d)
    qsum.enque(sm)
    qmax.enque(mx)
    qin.free_tensor(s)
    d = qout.deque(dst.dtype)
    sm = qsum.deque(sum_out.dtype)
    mx = qmax.deque(max_out.dtype)
    # softmax writes the original shape's om rows: the rows past them hold nothing to copy out
    asc.data_copy(dg, d, count=om * k)
    asc.data_copy(sumg, sm, count=om * blk)
    asc.data_copy(maxg, mx, count=om * blk)
    qout.free_tensor(d)
    qsum.free_tensor(sm)
    qmax.free_tensor(mx)


def reference(x, om, ok):
    """Rows [0, om): (dst [om, k], sum [om], max [om]) in float32."""
    x = x[:om].astype(np.float32)
    mx = x[:, :ok].max(axis=1, keepdims=True)
    e = np.exp(x - mx).astype(np.float32)
    s = e[:, :ok].astype(np.float64).sum(axis=1, keepdims=True).astype(np.float32)
    return (e / s).astype(np.float32), s[:, 0], mx[:, 0]


def run(mode, x, sum_dtype, om=None, ok=None, tmp_bytes=0, tiling=None, set_shape=True,
        nz=False):
    m, k = x.shape
    om, ok = om or m, ok or k
    blk = 32 // np.dtype(sum_dtype).itemsize
    dst = np.zeros_like(x)
    sm = np.zeros((m, blk), sum_dtype)
    mx = np.zeros((m, blk), sum_dtype)
    softmax_kernel[1](x, dst, sm, mx, tiling or asc.adv.SoftmaxTiling(), m, k, om, ok,
                      tmp_bytes, tiling is not None, set_shape, nz,
                      interpret=(mode == "interpret"))
    return dst, sm, mx


CASES = [   # (m, k, om, ok): tile multiples, and ragged original shapes inside aligned ones
    (8, 64, 8, 64), (10, 40, 9, 37), (3, 128, 3, 100)]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("m,k,om,ok", CASES)
@pytest.mark.parametrize("tmp_bytes", [0, 1024])
def test_softmax_float32_rows(mode, m, k, om, ok, tmp_bytes):
    x = (np.random.default_rng(m * k).random((m, k)) * 10 - 5).astype(np.float32)
    dst, sm, mx = run(mode, x, np.float32, om, ok, tmp_bytes)
    want, s, mxv = reference(x, om, ok)
    np.testing.assert_allclose(dst[:om], want, rtol=3e-6, atol=0)
    np.testing.assert_allclose(sm[:om], np.repeat(s[:, None], 8, axis=1), rtol=3e-6)
    np.testing.assert_array_equal(mx[:om], np.repeat(mxv[:, None], 8, axis=1))
    assert np.allclose(dst[:om, :ok].sum(axis=1), 1.0, atol=1e-5)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("sum_dtype", [np.float16, np.float32])
def test_softmax_float16(mode, sum_dtype):
    m, k, om, ok = 6, 48, 5, 45
    x = (np.random.default_rng(7).random((m, k)) * 6 - 3).astype(np.float16)
    dst, sm, mx = run(mode, x, sum_dtype, om, ok)
    want, s, mxv = reference(x, om, ok)
    blk = 32 // np.dtype(sum_dtype).itemsize
    np.testing.assert_allclose(dst[:om].astype(np.float32), want.astype(np.float16)
                               .astype(np.float32), rtol=1e-3, atol=0)
    np.testing.assert_allclose(sm[:om].astype(np.float32),
                               np.repeat(s.astype(sum_dtype)[:, None], blk, axis=1)
                               .astype(np.float32), rtol=1e-3)
    np.testing.assert_array_equal(mx[:om], np.repeat(mxv.astype(sum_dtype)[:, None], blk,
                                                     axis=1))


@pytest.mark.parametrize("mode", MODES)
def test_softmax_takes_a_host_tiling_for_its_shape(mode):
    x = np.random.default_rng(3).random((8, 64)).astype(np.float32)
    t = asc.adv.SoftmaxTiling(src_m=8, src_k=64, split_m=4, range_m=2, tail_m=0)
    dst, _, _ = run(mode, x, np.float32, tiling=t)
    np.testing.assert_allclose(dst, reference(x, 8, 64)[0], rtol=3e-6)


@pytest.mark.parametrize("mode", MODES)
def test_softmax_refuses_a_tiling_that_misses_rows(mode):
    x = np.ones((8, 64), np.float32)
    t = asc.adv.SoftmaxTiling(src_m=8, src_k=64, split_m=3, range_m=2, tail_m=0)
    with pytest.raises(Exception, match=r"asc.adv.softmax: tiling must split the shape's 8 "
                                        r"rows, got split_m=3 range_m=2 tail_m=0"):
        run(mode, x, np.float32, tiling=t)


@pytest.mark.parametrize("mode", MODES)
def test_softmax_needs_the_shape_info(mode):
    with pytest.raises(Exception, match=r"asc.adv.softmax: src must carry its shape "
                                        r"\(src.set_shape_info"):
        run(mode, np.ones((8, 64), np.float32), np.float32, set_shape=False)


def test_softmax_needs_an_aligned_last_axis():
    x = np.ones((4, 40), np.float32)
    with pytest.raises(Exception, match=r"asc.adv.softmax: the last axis of src's shape must "
                                        r"be 32-byte aligned \(a multiple of 8 elements\), got "
                                        r"k=36"):
        softmax_kernel[1](x, np.zeros_like(x), np.zeros((4, 8), np.float32),
                          np.zeros((4, 8), np.float32), asc.adv.SoftmaxTiling(), 4, 36, 4, 36,
                          0, False, True, False, interpret=True)


def test_softmax_original_shape_must_fit():
    with pytest.raises(Exception, match=r"asc.adv.softmax: src's original shape must fit in "
                                        r"its shape, got original \[4, 72\] in shape \[4, 64\]"):
        run("interpret", np.ones((4, 64), np.float32), np.float32, om=4, ok=72)


@pytest.mark.parametrize("mode", MODES)
def test_softmax_temporary_space_must_hold_a_row(mode):
    with pytest.raises(Exception, match=r"asc.adv.softmax: the temporary space must hold 288 "
                                        r"bytes per row of a chunk \(rows: 1\), got 256 bytes"):
        run(mode, np.ones((8, 64), np.float32), np.float32, tmp_bytes=256)


def test_softmax_float16_needs_room_for_its_float_copy():
    # a float16 row is cast to float32 in the temporary space: (16 + 64 + k) floats per row
    with pytest.raises(Exception, match=r"must hold 512 bytes per row of a chunk \(rows: 1\), "
                                        r"got 480 bytes"):
        run("interpret", np.ones((2, 48), np.float16), np.float16, tmp_bytes=480)


def test_softmax_nz_format_is_not_supported():
    with pytest.raises(Exception, match=r"asc.adv.softmax: data_format_nz=True \(NZ input\) is "
                                        r"not supported"):
        run("interpret", np.ones((8, 64), np.float32), np.float32, tmp_bytes=1024, nz=True)


def test_softmax_sum_must_match_src_dtype():
    with pytest.raises(Exception, match=r"asc.adv.softmax: sum and max must have src's dtype "
                                        r"\(or float32 for float16 src\), got src=float32 "
                                        r"sum=float16 max=float16"):
        run("interpret", np.ones((8, 64), np.float32), np.float16)


def test_softmax_tiling_fields_are_int32():
    with pytest.raises(AttributeError, match=r"SoftmaxTiling: field must be one of src_m"):
        asc.adv.SoftmaxTiling(srcM=3)
    with pytest.raises(ValueError, match=r"SoftmaxTiling: split_m must be an int32, got "
                                         r"split_m=2147483648"):
        asc.adv.SoftmaxTiling(split_m=2**31)


@asc.jit
def shape_info_kernel(out: asc.GlobalAddress, a: asc.ConstExpr[int], b: asc.ConstExpr[int]):
    og = asc.GlobalTensor()
    og.set_global_buffer(out)
    pipe = asc.TPipe()
    q = asc.TQue(asc.TPosition.VECIN, 1)
    pipe.init_buffer(que=q, num=1, len=a * b * 4)
    t = q.alloc_tensor(asc.float32)
    info = asc.ShapeInfo(asc.array(asc.int32, (a, b)))
    og.set_value(0, asc.get_shape_size(info))
    og.set_value(1, asc.get_shape_size(t.get_shape_info()))
    t.set_shape_info(info)
    got = t.get_shape_info()
    og.set_value(2, asc.get_shape_size(got))
    filled = asc.array(asc.int32, 3, 7)
    og.set_value(3, filled[0] + filled[2])
    og.set_value(4, asc.get_shape_size(asc.ShapeInfo(asc.array(asc.int32, (2, 3, 4)),
                                                     asc.array(asc.int32, (2, 3, 3)))))
    og.set_value(5, asc.get_shape_size(asc.ShapeInfo()))
    q.free_tensor(t)


@pytest.mark.parametrize("mode", MODES)
def test_shape_info_round_trip(mode):
    out = np.full(8, -1, np.int32)
    shape_info_kernel[1](out, 3, 16, interpret=(mode == "interpret"))
    # no shape info (and ShapeInfo()): 0 dims, size 1
    assert out[:6].tolist() == [48, 1, 48, 14, 24, 1]


@asc.jit
def bad_shape_kernel(out: asc.GlobalAddress, case: asc.ConstExpr[int]):
    og = asc.GlobalTensor()
    og.set_global_buffer(out)
    if case == 0:
        og.set_value(0, asc.get_shape_size(asc.ShapeInfo(asc.array(asc.int32, (1,) * 9))))
    if case == 1:
        a = asc.array(asc.int32, (1, 2), 5)
        og.set_value(0, a[0])
    if case == 2:
        a = asc.array(asc.int32, 0)
        og.set_value(0, a[0])


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case,msg", [
    (0, r"asc.ShapeInfo: shape must have 1 to 8 dims, got 9 dims"),
    (1, r"asc.array: fill_value must not be given together with initial values, got "
        r"fill_value"),
    (2, r"asc.array: length must be a positive integer, got length=0")])
def test_shape_info_and_array_errors(mode, case, msg):
    with pytest.raises(Exception, match=msg):
        bad_shape_kernel[1](np.zeros(8, np.int32), case, interpret=(mode == "interpret"))
