"""asc.gather_mask (Ascend C GatherMask) in both modes: built-in and user patterns, normal and
counter mode, strided src0, ragged counts, the returned count, and the checked-mode errors."""
import numpy as np
import pytest

import ascendc as asc
import rt


@asc.jit
def gm_builtin_kernel(x: asc.GlobalAddress, y: asc.GlobalAddress, cnt: asc.GlobalAddress,
                      n_x: int, n_y: int, pattern: int, reduce_mode: bool, mask: int,
                      blk_stride: int, reps: int, rep_stride: int, dst_off: int):
    xg = asc.GlobalTensor()
    yg = asc.GlobalTensor()
    cg = asc.GlobalTensor()
    xg.set_global_buffer(x)
    yg.set_global_buffer(y)
    cg.set_global_buffer(cnt)
    pipe = asc.TPipe()
    qx = asc.TQue(asc.TPosition.VECIN, 1)
    qy = asc.TQue(asc.TPosition.VECOUT, 1)
    pipe.init_buffer(que=qx, num=1, len=n_x * x.dtype.sizeof())
    pipe.init_buffer(que=qy, num=1, len=n_y * y.dtype.sizeof())
    xl = qx.alloc_tensor(x.dtype)
    asc.data_copy(xl, xg, count=n_x)
    qx.enque(xl)
    xl = qx.deque(x.dtype)
    yl = qy.alloc_tensor(y.dtype)
    asc.duplicate(yl, 0, n_y)
    k = asc.gather_mask(yl[dst_off:], xl, pattern, reduce_mode, mask,
                        asc.GatherMaskParams(blk_stride, reps, rep_stride, 0),
                        asc.GatherMaskMode.DEFAULT)
    qy.enque(yl)
    qx.free_tensor(xl)
    yl = qy.deque(y.dtype)
    asc.data_copy(yg, yl, count=n_y)
    qy.free_tensor(yl)
    cg.set_value(0, k)


@asc.jit
def gm_user_kernel(x: asc.GlobalAddress, p: asc.GlobalAddress, y: asc.GlobalAddress,
                   cnt: asc.GlobalAddress, n_x: int, n_p: int, n_y: int, reduce_mode: bool,
                   mask: int, reps: int, rep_stride: int, p_stride: int):
    xg = asc.GlobalTensor()
    pg = asc.GlobalTensor()
    yg = asc.GlobalTensor()
    cg = asc.GlobalTensor()
    xg.set_global_buffer(x)
    pg.set_global_buffer(p)
    yg.set_global_buffer(y)
    cg.set_global_buffer(cnt)
    pipe = asc.TPipe()
    qx = asc.TQue(asc.TPosition.VECIN, 1)
    qp = asc.TQue(asc.TPosition.VECIN, 1)
    qy = asc.TQue(asc.TPosition.VECOUT, 1)
    pipe.init_buffer(que=qx, num=1, len=n_x * x.dtype.sizeof())
    pipe.init_buffer(que=qp, num=1, len=n_p * p.dtype.sizeof())
    pipe.init_buffer(que=qy, num=1, len=n_y * y.dtype.sizeof())
    xl = qx.alloc_tensor(x.dtype)
    pl = qp.alloc_tensor(p.dtype)
    asc.data_copy(xl, xg, count=n_x)
    asc.data_copy(pl, pg, count=n_p)
    qx.enque(xl)
    qp.enque(pl)
    xl = qx.deque(x.dtype)
    pl = qp.deque(p.dtype)
    yl = qy.alloc_tensor(y.dtype)
    asc.duplicate(yl, 0, n_y)
    k = asc.gather_mask(yl, xl, pl, reduce_mode, mask,
                        asc.GatherMaskParams(src0_block_stride=1, repeat_times=reps,
                                             src0_repeat_stride=rep_stride,
                                             src1_repeat_stride=p_stride))
    qy.enque(yl)
    qx.free_tensor(xl)
    qp.free_tensor(pl)
    yl = qy.deque(y.dtype)
    asc.data_copy(yg, yl, count=n_y)
    qy.free_tensor(yl)
    cg.set_value(0, k)


def _builtin_bits(code, lanes):
    j = np.arange(lanes)
    return {1: j % 2 == 0, 2: j % 2 == 1, 3: j % 4 == 0, 4: j % 4 == 1, 5: j % 4 == 2,
            6: j % 4 == 3, 7: np.ones(lanes, bool)}[code]


def _reference(x, bits_of_repeat, reduce_mode, mask, blk_stride, reps, rep_stride):
    """The documented semantics, written independently of the primitive: per repeat the lanes
    (8 blocks of 32 bytes, block b at (r*rep_stride + b*blk_stride) blocks), the picked ones
    appended in order."""
    lanes = 256 // x.itemsize
    per_blk = 32 // x.itemsize
    total = mask if reduce_mode else reps * lanes
    out = []
    for r in range((total + lanes - 1) // lanes):
        bits = bits_of_repeat(r)
        for j in range(min(lanes, total - r * lanes)):
            if bits[j]:
                out.append(x[(r * rep_stride + j // per_blk * blk_stride) * per_blk
                             + j % per_blk])
    return np.array(out, x.dtype)


MODES = ["interpret", "compiled"]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int32])
@pytest.mark.parametrize("pattern, reduce_mode, mask, blk_stride, reps, rep_stride", [
    (1, False, 0, 1, 4, 8),        # even elements of 4 dense repeats (the stride-2 split)
    (2, False, 0, 1, 3, 8),        # odd elements
    (3, False, 0, 2, 2, 16),       # every 4th, blocks 2 apart
    (6, False, 0, 1, 2, 4),        # repeats overlapping by half
    (7, True, 203, 1, 1, 8),       # counter mode, a ragged count: all of 203 elements
    (2, True, 77, 1, 9, 8),        # counter mode ignores repeat_times
])
def test_builtin_patterns(mode, dtype, pattern, reduce_mode, mask, blk_stride, reps, rep_stride):
    rng = np.random.default_rng(3)
    n_x = 2048
    x = (rng.standard_normal(n_x) * 100).astype(dtype)
    n_y = 1024
    y = np.full(n_y, 99, dtype)
    cnt = np.zeros(8, np.int64)
    dst_off = 32 // x.itemsize          # dst at a 32-byte aligned offset
    gm_builtin_kernel[1](x, y, cnt, n_x, n_y, pattern, reduce_mode, mask, blk_stride, reps,
                         rep_stride, dst_off, interpret=(mode == "interpret"))
    lanes = 256 // x.itemsize
    want = _reference(x, lambda r: _builtin_bits(pattern, lanes), reduce_mode, mask, blk_stride,
                      reps, rep_stride)
    assert cnt[0] == want.size
    np.testing.assert_array_equal(y[dst_off:dst_off + want.size], want)
    assert not y[:dst_off].any() and not y[dst_off + want.size:].any()


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype, pdtype", [(np.float32, np.uint32), (np.float16, np.uint16)])
@pytest.mark.parametrize("reduce_mode, mask, reps, p_stride", [
    (False, 0, 3, 1),        # one pattern block per repeat
    (False, 0, 2, 0),        # stride 0: every repeat reuses the first pattern
    (True, 150, 1, 1),       # counter mode, ragged
])
def test_user_patterns(mode, dtype, pdtype, reduce_mode, mask, reps, p_stride):
    rng = np.random.default_rng(11)
    n_x = 1024
    x = rng.uniform(-5, 5, n_x).astype(dtype)
    n_p = 64
    p = rng.integers(0, np.iinfo(pdtype).max, n_p, dtype=pdtype, endpoint=True)
    n_y = 1024
    y = np.zeros(n_y, dtype)
    cnt = np.zeros(8, np.int64)
    gm_user_kernel[1](x, p, y, cnt, n_x, n_p, n_y, reduce_mode, mask, reps, 8, p_stride,
                      interpret=(mode == "interpret"))
    lanes = 256 // x.itemsize
    pbits = np.unpackbits(p.view(np.uint8), bitorder="little").astype(bool)
    per_blk_bits = 256
    want = _reference(x, lambda r: pbits[r * p_stride * per_blk_bits:][:lanes], reduce_mode,
                      mask, 1, reps, 8)
    assert cnt[0] == want.size
    np.testing.assert_array_equal(y[:want.size], want)
    assert not y[want.size:].any()


def _run_builtin(**kw):
    args = dict(n_x=256, n_y=256, pattern=1, reduce_mode=False, mask=0, blk_stride=1, reps=1,
                rep_stride=8, dst_off=0)
    args.update(kw)
    x = np.arange(args["n_x"], dtype=np.float32)
    gm_builtin_kernel[1](x, np.zeros(args["n_y"], np.float32), np.zeros(8, np.int64),
                         *args.values(), interpret=True)


@pytest.mark.parametrize("kw, message", [
    (dict(pattern=8), r"gather_mask: a built-in src1_pattern must be in \[1, 7\], "
                      r"got src1_pattern=8"),
    (dict(dst_off=3), r"gather_mask: dst must start 32-byte aligned in UB, got byte offset="),
    (dict(reps=5), r"gather_mask: src0 must hold every element the repeats touch, "
                   r"got index=319"),
    (dict(n_y=8, reps=2), r"gather_mask: dst must hold every element the repeats touch, "
                          r"got index=8"),
    (dict(reduce_mode=True, mask=0), r"gather_mask: mask must be in \[1, 4294967295\] in "
                                     r"counter mode \(reduce_mode=True\), got mask=0"),
    (dict(reps=256), r"gather_mask: params.repeat_times must be in \[0, 255\], "
                     r"got params.repeat_times=256"),
])
def test_errors(kw, message):
    with pytest.raises(rt.AclError, match=message):
        _run_builtin(**kw)


def test_pattern_dtype_must_match():
    x = np.zeros(256, np.float32)
    with pytest.raises(rt.AclError, match=r"gather_mask: src1_pattern must be uint32 for 4-byte "
                                          r"elements|src1_pattern must be uint16 for 2-byte"):
        gm_user_kernel[1](x, np.zeros(64, np.uint16), np.zeros(256, np.float32),
                          np.zeros(8, np.int64), 256, 64, 256, False, 0, 1, 8, 0, interpret=True)


def test_simulated_on_the_vector_pipe():
    """The NPU simulator charges gather_mask to the V pipe, like its peers."""
    from rt.npu.model import pipe_model
    m = pipe_model(rt.get_soc())
    assert m.vector_cost("gather_mask") == (10, 2)
    assert asc.gather_mask.__name__ == "gather_mask"
    from ascendc.lang.surface import FUNCTIONS
    assert FUNCTIONS["gather_mask"].pipe == asc.PipeID.PIPE_V


@asc.jit
def gm_sync_kernel(x: asc.GlobalAddress, z: asc.GlobalAddress, ordered: int):
    xg = asc.GlobalTensor()
    xg.set_global_buffer(x, 256)
    zg = asc.GlobalTensor()
    zg.set_global_buffer(z, 128)
    pipe = asc.TPipe()
    ib = asc.TBuf(asc.TPosition.VECCALC)
    ob = asc.TBuf(asc.TPosition.VECCALC)
    pipe.init_buffer(ib, 256 * 4)
    pipe.init_buffer(ob, 128 * 4)
    a = ib.get(x.dtype)
    b = ob.get(x.dtype)
    asc.data_copy(a, xg, 256)
    if ordered == 1:
        asc.set_flag(asc.HardEvent.MTE2_V, 0)
        asc.wait_flag(asc.HardEvent.MTE2_V, 0)
    asc.gather_mask(b, a, 1, False, 0, asc.GatherMaskParams(1, 4, 8, 0))
    asc.set_flag(asc.HardEvent.V_MTE3, 0)
    asc.wait_flag(asc.HardEvent.V_MTE3, 0)
    asc.data_copy(zg, b, 128)


@pytest.mark.parametrize("mode", MODES)
def test_checked_mode_visibility(mode):
    """gather_mask reads src0 on the V pipe: without the MTE2 -> V wait checked mode reports it;
    with it the result is the even elements."""
    x = np.arange(256, dtype=np.float32) - 100
    z = np.zeros(128, np.float32)
    gm_sync_kernel[1](x, z, 1, interpret=(mode == "interpret"), checked=True)
    np.testing.assert_array_equal(z, x[::2])
    with pytest.raises(rt.AclError, match=r"gather_mask: src0 must be ordered after the MTE2 "
                                          r"copy that wrote it"):
        gm_sync_kernel[1](x, z, 0, interpret=(mode == "interpret"), checked=True)


def test_npu_view_runs_it_on_the_vector_pipe():
    """The NPU view records gather_mask as a V-pipe instruction of its repeats, replayed with
    the vector cost of rt/npu/model.py (deterministic: two traces give the same cycles)."""
    x = np.arange(256, dtype=np.float32)
    z = np.zeros(128, np.float32)
    spans = []
    for _ in range(2):
        tl = asc.npu_trace(gm_sync_kernel, 1, x, z, 1)
        recs = [(i, p, s, e) for i, _, p, s, e in tl.records if i.name == "gather_mask"]
        assert len(recs) == 1
        ins, pipe, start, end = recs[0]
        assert pipe == "VECTOR" and ins.repeats == 4
        spans.append(end - start)
    np.testing.assert_array_equal(z, x[::2])
    assert spans[0] == spans[1] and spans[0] > 0
