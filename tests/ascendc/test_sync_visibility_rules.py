"""Checked mode's visibility rules beyond a plain wait: a wait lands only the copies issued
before its set_flag, pipe_barrier(PIPE_MTE2) orders MTE2 alone, a VECIN deque orders MTE2 before
V only, what V writes reaches MTE3 only through a V_MTE3 wait, and the vector readers outside
the element-wise families (copy, transpose, trans_data_to_5hd, asc.adv.softmax) check their
sources. Each rule: the kernel missing the ordering is reported with its message, the same
kernel with it computes the right result."""
import numpy as np
import pytest

import ascendc as asc
import rt

N = 256

SET_AFTER_COPY, SET_BEFORE_COPY, BARRIER_ALL, BARRIER_MTE2, VECIN_V_MTE3, VECIN_MTE3, \
    TWO_SETS_ONE_WAIT_EACH, V_WRITE_UNORDERED = range(8)


@asc.jit
def order_kernel(x: asc.GlobalAddress, z: asc.GlobalAddress, how: int):
    xg = asc.GlobalTensor()
    xg.set_global_buffer(x, N)
    zg = asc.GlobalTensor()
    zg.set_global_buffer(z, N)
    pipe = asc.TPipe()
    buf = asc.TBuf(asc.TPosition.VECCALC)
    pipe.init_buffer(buf, N * 4)
    out = asc.TBuf(asc.TPosition.VECCALC)
    pipe.init_buffer(out, N * 4)
    a = buf.get(asc.float32)
    b = out.get(asc.float32)
    if how == VECIN_V_MTE3 or how == VECIN_MTE3:
        qi = asc.TQue(asc.TPosition.VECIN, 1)
        pipe.init_buffer(qi, 1, N * 4)
        t = qi.alloc_tensor(asc.float32)
        asc.data_copy(t, xg, N)
        qi.enque(t)
        t2 = qi.deque(asc.float32)          # a wait MTE2 -> V: MTE3 is not ordered by it
        if how == VECIN_V_MTE3:
            asc.set_flag(asc.HardEvent.V_MTE3, 0)
            asc.wait_flag(asc.HardEvent.V_MTE3, 0)
        asc.data_copy(zg, t2, N)
        qi.free_tensor(t2)
        return
    if how == SET_BEFORE_COPY:
        asc.set_flag(asc.HardEvent.MTE2_V, 0)
        asc.data_copy(a, xg, N)
        asc.wait_flag(asc.HardEvent.MTE2_V, 0)
    elif how == BARRIER_ALL:
        asc.data_copy(a, xg, N)
        asc.pipe_barrier(asc.PipeID.PIPE_ALL)
    elif how == BARRIER_MTE2:
        asc.data_copy(a, xg, N)
        asc.pipe_barrier(asc.PipeID.PIPE_MTE2)
    elif how == TWO_SETS_ONE_WAIT_EACH:
        # two copies, each followed by its own set: the first wait lands the first copy only
        asc.data_copy(a, xg, N // 2)
        asc.set_flag(asc.HardEvent.MTE2_V, 0)
        asc.data_copy(a[N // 2:], xg[N // 2:], N // 2)
        asc.set_flag(asc.HardEvent.MTE2_V, 0)
        asc.wait_flag(asc.HardEvent.MTE2_V, 0)
        asc.adds(b, a, 1.0, N // 2)
        asc.wait_flag(asc.HardEvent.MTE2_V, 0)
        asc.adds(b[N // 2:], a[N // 2:], 1.0, N // 2)
    else:
        asc.data_copy(a, xg, N)
        asc.set_flag(asc.HardEvent.MTE2_V, 0)
        asc.wait_flag(asc.HardEvent.MTE2_V, 0)
    if how != TWO_SETS_ONE_WAIT_EACH:
        asc.adds(b, a, 1.0, N)
    if how != V_WRITE_UNORDERED:        # MTE3 reads what V wrote: ordered by V_MTE3
        asc.set_flag(asc.HardEvent.V_MTE3, 0)
        asc.wait_flag(asc.HardEvent.V_MTE3, 0)
    asc.data_copy(zg, b, N)


def _run(kernel, how, interpret, checked=True, dtype=np.float32, n=N):
    x = (np.arange(n) % 97 - 40).astype(dtype)
    z = np.zeros_like(x)
    kernel[1](x, z, how, interpret=interpret, checked=checked)
    return x, z


@pytest.mark.parametrize("how, expect", [
    (SET_AFTER_COPY, lambda x: x + 1),
    (BARRIER_ALL, lambda x: x + 1),
    (TWO_SETS_ONE_WAIT_EACH, lambda x: x + 1),
    (VECIN_V_MTE3, lambda x: x),
])
def test_ordered_kernel_is_correct(interpret, how, expect):
    x, z = _run(order_kernel, how, interpret)
    np.testing.assert_array_equal(z, expect(x))


_HEAD = r"kernel 'order_kernel'\[1\]: block_idx=0/1: "


@pytest.mark.parametrize("how, message", [
    (SET_BEFORE_COPY, r"adds: src must be ordered after the MTE2 copy that wrote it, by "
                      r"wait_flag\(HardEvent.MTE2_V\) after the copy's set_flag or a chain of "
                      r"flags through another pipe \(the NPU reads stale data\), got a read by V "
                      r"of UB bytes \[0, 1024\) that no wait has landed yet \(a set_flag issued "
                      r"before the copy does not cover it\)"),
    (BARRIER_MTE2, r"adds: src must be ordered after the MTE2 copy that wrote it, by "
                   r"wait_flag\(HardEvent.MTE2_V\) or a chain of flags through another pipe "
                   r"\(the NPU reads stale data\), got a read by V of UB bytes \[0, 1024\) that "
                   r"the copy's waits made visible to MTE2 only"),
    (V_WRITE_UNORDERED, r"data_copy: src must be ordered after the V instruction that wrote "
                        r"it, by wait_flag\(HardEvent.V_MTE3\) or a chain of flags through "
                        r"another pipe \(the NPU reads stale data\), got a read by MTE3 of UB "
                        r"bytes \[1024, 2048\) that the write's waits made visible to V only"),
    (VECIN_MTE3, r"data_copy: src must be ordered after the MTE2 copy that wrote it, by "
                 r"wait_flag\(HardEvent.MTE2_MTE3\) .* got a read by MTE3 of UB bytes "
                 r"\[2048, 3072\) that the copy's waits made visible to V, MTE2 only"),
])
def test_unordered_kernel_is_reported(interpret, how, message):
    with pytest.raises(rt.AclError, match=_HEAD + message):
        _run(order_kernel, how, interpret)


def test_unchecked_mode_records_nothing(interpret):
    """Unchecked mode defers nothing: even the unordered kernels read the copy."""
    for how in (SET_BEFORE_COPY, BARRIER_MTE2, V_WRITE_UNORDERED):
        x, z = _run(order_kernel, how, interpret, checked=False)
        np.testing.assert_array_equal(z, x + 1)


# ---- the other vector readers ------------------------------------------------------------------

M = 16          # rows (softmax) / the 16 x 16 blocks of transpose and trans_data_to_5hd


@asc.jit
def _copy_in(xg, ordered):
    """UB buffers a (x copied in, ordered before V when `ordered`) and b; a third buffer w."""
    pipe = asc.TPipe()
    ib = asc.TBuf(asc.TPosition.VECCALC)
    pipe.init_buffer(ib, M * M * 4)
    ob = asc.TBuf(asc.TPosition.VECCALC)
    pipe.init_buffer(ob, M * M * 4)
    wb = asc.TBuf(asc.TPosition.VECCALC)
    pipe.init_buffer(wb, 2 * M * 32)
    a = ib.get(xg.dtype)
    b = ob.get(xg.dtype)
    asc.data_copy(a, xg, M * M)
    if ordered == 1:
        asc.set_flag(asc.HardEvent.MTE2_V, 0)
        asc.wait_flag(asc.HardEvent.MTE2_V, 0)
    return a, b, wb.get(asc.float32)


@asc.jit
def _copy_out(zg, b):
    asc.set_flag(asc.HardEvent.V_MTE3, 0)
    asc.wait_flag(asc.HardEvent.V_MTE3, 0)
    asc.data_copy(zg, b, M * M)


@asc.jit
def copy_reader(x: asc.GlobalAddress, z: asc.GlobalAddress, ordered: int):
    xg = asc.GlobalTensor()
    xg.set_global_buffer(x, M * M)
    zg = asc.GlobalTensor()
    zg.set_global_buffer(z, M * M)
    a, b, w = _copy_in(xg, ordered)
    asc.copy(b, a, 64, 4, asc.CopyRepeatParams(1, 1, 8, 8))
    _copy_out(zg, b)


@asc.jit
def transpose_reader(x: asc.GlobalAddress, z: asc.GlobalAddress, ordered: int):
    xg = asc.GlobalTensor()
    xg.set_global_buffer(x, M * M)
    zg = asc.GlobalTensor()
    zg.set_global_buffer(z, M * M)
    a, b, w = _copy_in(xg, ordered)
    asc.transpose(b, a)
    _copy_out(zg, b)


@asc.jit
def trans5hd_reader(x: asc.GlobalAddress, z: asc.GlobalAddress, ordered: int):
    xg = asc.GlobalTensor()
    xg.set_global_buffer(x, M * M)
    zg = asc.GlobalTensor()
    zg.set_global_buffer(z, M * M)
    pipe = asc.TPipe()
    qa = asc.TQue(asc.TPosition.VECCALC, 1)
    qb = asc.TQue(asc.TPosition.VECCALC, 1)
    pipe.init_buffer(que=qa, num=1, len=M * M * 2)
    pipe.init_buffer(que=qb, num=1, len=M * M * 2)
    a = qa.alloc_tensor(x.dtype)
    b = qb.alloc_tensor(z.dtype)
    asc.data_copy(a, xg, M * M)
    if ordered == 1:
        asc.set_flag(asc.HardEvent.MTE2_V, 0)
        asc.wait_flag(asc.HardEvent.MTE2_V, 0)
    d = [b[M * 0], b[M * 1], b[M * 2], b[M * 3], b[M * 4], b[M * 5], b[M * 6], b[M * 7],
         b[M * 8], b[M * 9], b[M * 10], b[M * 11], b[M * 12], b[M * 13], b[M * 14], b[M * 15]]
    s = [a[M * 0], a[M * 1], a[M * 2], a[M * 3], a[M * 4], a[M * 5], a[M * 6], a[M * 7],
         a[M * 8], a[M * 9], a[M * 10], a[M * 11], a[M * 12], a[M * 13], a[M * 14], a[M * 15]]
    asc.trans_data_to_5hd(d, s, asc.TransDataTo5HDParams(repeat_times=1, dst_rep_stride=0,
                                                         src_rep_stride=0))
    _copy_out(zg, b)
    qa.free_tensor(a)
    qb.free_tensor(b)


@asc.jit
def softmax_reader(x: asc.GlobalAddress, z: asc.GlobalAddress, ordered: int):
    xg = asc.GlobalTensor()
    xg.set_global_buffer(x, M * M)
    zg = asc.GlobalTensor()
    zg.set_global_buffer(z, M * M)
    a, b, w = _copy_in(xg, ordered)
    shape = asc.array(asc.int32, (M, M))
    a.set_shape_info(asc.ShapeInfo(shape, shape))
    asc.adv.softmax(b, w, w[M * 8:], a, asc.adv.SoftmaxTiling())
    _copy_out(zg, b)


COPY, TRANSPOSE, TRANS5HD, SOFTMAX = copy_reader, transpose_reader, trans5hd_reader, \
    softmax_reader


def _reference(which, x):
    if which == COPY:
        return x
    m = x.reshape(M, M)
    if which in (TRANSPOSE, TRANS5HD):
        return m.T.reshape(-1)
    e = np.exp(m.astype(np.float32) - m.max(axis=1, keepdims=True))
    return (e / e.sum(axis=1, keepdims=True)).reshape(-1)


_READERS = [(COPY, np.float32, "copy", "src"), (TRANSPOSE, np.float16, "transpose", "src"),
            (TRANS5HD, np.float16, "trans_data_to_5hd", "src_list"),
            (SOFTMAX, np.float32, "asc.adv.softmax", "src")]


@pytest.mark.parametrize("which, dtype, api, what", _READERS)
def test_reader_after_the_wait_is_correct(interpret, which, dtype, api, what):
    x = ((np.arange(M * M) % 23) / 8 - 1).astype(dtype)
    z = np.zeros_like(x)
    which[1](x, z, 1, interpret=interpret)
    np.testing.assert_allclose(z, _reference(which, x).astype(dtype), rtol=2e-3, atol=1e-3)


@pytest.mark.parametrize("which, dtype, api, what", _READERS)
def test_reader_without_the_wait_is_reported(interpret, which, dtype, api, what):
    x = ((np.arange(M * M) % 23) / 8 - 1).astype(dtype)
    z = np.zeros_like(x)
    head = r"kernel '" + which.__name__ + r"'\[1\]: block_idx=0/1: "
    with pytest.raises(rt.AclError, match=head
                       + api.replace(".", r"\.") + ": " + what
                       + r" must be ordered after the MTE2 copy that wrote it, by "
                       r"wait_flag\(HardEvent.MTE2_V\) after the copy's set_flag .* got a read "
                       r"by V of UB bytes \[0, \d+\) that no wait has landed yet"):
        which[1](x, z, 0, interpret=interpret)
