"""asc.adv.softmax_flash_v2 (FlashAttention-2's online softmax) with SoftMaxShapeInfo and
SoftmaxConfig, in both modes against numpy: a first block (is_update=False) then an update
block, rows whose data (ori_src_k) is shorter than their stride, the state broadcast over a
32-byte block per row or one element per row (SOFTMAX_OUTPUT_WITHOUT_BRC); the unsupported
forms are refused by message in both modes."""
import numpy as np
import pytest

import ascendc as asc

M, K = 4, 64


@asc.jit
def flash_kernel(x: asc.GlobalAddress, x2: asc.GlobalAddress, z: asc.GlobalAddress,
                 st: asc.GlobalAddress, ok: int, brc: int):
    xg, x2g, zg, sg = asc.GlobalTensor(), asc.GlobalTensor(), asc.GlobalTensor(), \
        asc.GlobalTensor()
    xg.set_global_buffer(x, M * K)
    x2g.set_global_buffer(x2, M * K)
    zg.set_global_buffer(z, 2 * M * K)
    sg.set_global_buffer(st, 3 * M * 8)
    pipe = asc.TPipe()
    qi, qo, qs = asc.TQue(asc.TPosition.VECIN, 2), asc.TQue(asc.TPosition.VECOUT, 1), \
        asc.TQue(asc.TPosition.VECOUT, 1)
    tb = asc.TBuf(asc.TPosition.VECCALC)
    pipe.init_buffer(qi, 2, M * K * 4)
    pipe.init_buffer(qo, 1, 2 * M * K * 4)
    pipe.init_buffer(qs, 1, 3 * M * 8 * 4)
    pipe.init_buffer(buf=tb, num=K * 4 + 1024)
    a, b = qi.alloc_tensor(x.dtype), qi.alloc_tensor(x.dtype)
    asc.data_copy(a, xg, M * K)
    asc.data_copy(b, x2g, M * K)
    qi.enque(a)
    qi.enque(b)
    a, b = qi.deque(x.dtype), qi.deque(x.dtype)
    o, s = qo.alloc_tensor(x.dtype), qs.alloc_tensor(x.dtype)
    asc.duplicate(s, 0.0, 3 * M * 8)
    asc.duplicate(o, 0.0, 2 * M * K)    # softmax writes the original columns; all are copied out
    asc.pipe_barrier(asc.PipeID.PIPE_V)
    tmp = tb.get(asc.uint8)
    shape = asc.adv.SoftMaxShapeInfo(M, K, M, ok)
    tiling = asc.adv.SoftmaxTiling()
    mx, sm, em = s[0:], s[M * 8:], s[2 * M * 8:]
    if brc == 1:
        asc.adv.softmax_flash_v2(o, sm, mx, a, em, sm, mx, tiling, shape, shared_tmp_buffer=tmp)
        asc.adv.softmax_flash_v2(o[M * K:], sm, mx, b, em, sm, mx, tiling, shape,
                                 shared_tmp_buffer=tmp, is_update=True)
    else:
        cfg = asc.adv.SoftmaxConfig(False, M, K, asc.adv.SoftmaxMode.SOFTMAX_OUTPUT_WITHOUT_BRC)
        asc.adv.softmax_flash_v2(o, sm, mx, a, em, sm, mx, tiling, shape,
                                 shared_tmp_buffer=tmp, config=cfg)
        asc.adv.softmax_flash_v2(o[M * K:], sm, mx, b, em, sm, mx, tiling, shape,
                                 shared_tmp_buffer=tmp, is_update=True, config=cfg)
    qo.enque(o)
    qs.enque(s)
    qi.free_tensor(a)
    qi.free_tensor(b)
    o, s = qo.deque(x.dtype), qs.deque(x.dtype)
    asc.data_copy(zg, o, 2 * M * K)
    asc.data_copy(sg, s, 3 * M * 8)
    qo.free_tensor(o)
    qs.free_tensor(s)


@pytest.mark.parametrize("ok,brc", [(64, 1), (40, 1), (40, 0)])
def test_flash_v2_first_block_then_update(ok, brc, mode):
    rng = np.random.default_rng(ok + brc)
    x = (rng.standard_normal((M, K)) * 3).astype(np.float32)
    x2 = (rng.standard_normal((M, K)) * 3 + 1).astype(np.float32)
    m1 = x[:, :ok].max(1, keepdims=True)
    p1 = np.exp(x[:, :ok] - m1)
    s1 = p1.sum(1, keepdims=True)
    m2 = np.maximum(m1, x2[:, :ok].max(1, keepdims=True))
    p2 = np.exp(x2[:, :ok] - m2)
    em = np.exp(m1 - m2)
    s2 = em * s1 + p2.sum(1, keepdims=True)
    z = np.zeros((2, M, K), np.float32)
    st = np.zeros((3, M * 8), np.float32)
    flash_kernel[1](x, x2, z, st, ok, brc, interpret=(mode == "interpret"))
    np.testing.assert_allclose(z[0, :, :ok], p1, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(z[1, :, :ok], p2, rtol=1e-6, atol=1e-7)
    per_row = 8 if brc else 1
    for i, want in enumerate((m2, s2, em)):
        got = st[i, :M * per_row].reshape(M, per_row)
        np.testing.assert_allclose(got, np.repeat(want, per_row, axis=1), rtol=1e-6)
    if not brc:
        assert np.all(st[:, M:] == 0)        # one element per row: nothing past M


@asc.jit
def flash_without_tmp(x: asc.GlobalAddress):
    pipe = asc.TPipe()
    q = asc.TQue(asc.TPosition.VECIN, 1)
    pipe.init_buffer(q, 1, 1024)
    t = q.alloc_tensor(asc.float32)
    asc.adv.softmax_flash_v2(t, t, t, t, t, t, t, asc.adv.SoftmaxTiling(),
                             asc.adv.SoftMaxShapeInfo(1, 8, 1, 8))
    q.free_tensor(t)


def test_flash_v2_needs_shared_tmp_buffer(mode):
    with pytest.raises(Exception, match=r"asc.adv.softmax_flash_v2: shared_tmp_buffer must be "
                                        r"given"):
        flash_without_tmp[1](np.zeros(8, np.float32), interpret=(mode == "interpret"))
