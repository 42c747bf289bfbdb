"""asc.bilinear_interpolation (Ascend C BilinearInterpolation), float16, in both modes
(pyasc's kernels/test_bilinear_interpolation)."""
import numpy as np
import pytest

import ascendc as asc
import rt


@asc.jit
def bilinear_kernel(x: asc.GlobalAddress, off: asc.GlobalAddress, y: asc.GlobalAddress,
                    z: asc.GlobalAddress, n0: int, n_off: int, n1: int, n_dst: int, mask: int,
                    h_repeat: int, repeat_mode: bool, dst_blk_stride: int, v_r_offset: int,
                    v_repeat: int):
    xg = asc.GlobalTensor()
    og = asc.GlobalTensor()
    yg = asc.GlobalTensor()
    zg = asc.GlobalTensor()
    xg.set_global_buffer(x)
    og.set_global_buffer(off)
    yg.set_global_buffer(y)
    zg.set_global_buffer(z)
    pipe = asc.TPipe()
    qx = asc.TQue(asc.TPosition.VECIN, 1)
    qo = asc.TQue(asc.TPosition.VECIN, 1)
    qy = asc.TQue(asc.TPosition.VECIN, 1)
    qz = asc.TQue(asc.TPosition.VECOUT, 1)
    tmp_buf = asc.TBuf(asc.TPosition.VECCALC)
    pipe.init_buffer(que=qx, num=1, len=n0 * 2)
    pipe.init_buffer(que=qo, num=1, len=n_off * 4)
    pipe.init_buffer(que=qy, num=1, len=n1 * 2)
    pipe.init_buffer(que=qz, num=1, len=n_dst * 2)
    pipe.init_buffer(buf=tmp_buf, num=1024)
    xl = qx.alloc_tensor(x.dtype)
    ol = qo.alloc_tensor(off.dtype)
    yl = qy.alloc_tensor(y.dtype)
    asc.data_copy(xl, xg, count=n0)
    asc.data_copy(ol, og, count=n_off)
    asc.data_copy(yl, yg, count=n1)
    qx.enque(xl)
    qo.enque(ol)
    qy.enque(yl)
    xl = qx.deque(x.dtype)
    ol = qo.deque(off.dtype)
    yl = qy.deque(y.dtype)
    zl = qz.alloc_tensor(z.dtype)
    asc.duplicate(zl, 5.0, n_dst)
    tmp = tmp_buf.alloc_tensor(asc.uint8)
    asc.bilinear_interpolation(zl, xl, ol, yl, mask, h_repeat, repeat_mode, dst_blk_stride,
                               v_r_offset, v_repeat, tmp)
    qz.enque(zl)
    qx.free_tensor(xl)
    qo.free_tensor(ol)
    qy.free_tensor(yl)
    tmp_buf.free_tensor(tmp)
    zl = qz.deque(z.dtype)
    asc.data_copy(zg, zl, count=n_dst)
    qz.free_tensor(zl)


def _reference(z0, x, off, y, mask, h_repeat, repeat_mode, dst_blk_stride, v_r_offset, v_repeat):
    """The docs' iterations, float16 rounding after each product and each sum."""
    z = z0.copy()
    for v in range(v_repeat):
        for h in range(h_repeat):
            t = v * h_repeat + h
            for b in range(8):
                s = y[t * 8 + b] if repeat_mode else y[t]
                src = x[off[t * 8 + b] // 2:][:16]
                d0 = v * v_r_offset + b * dst_blk_stride * 16
                for e in range(16):
                    if b * 16 + e < mask:
                        p = np.float16(np.float32(src[e]) * np.float32(s))
                        z[d0 + e] = p if h == 0 else np.float16(np.float32(z[d0 + e]) + p)
    return z


@pytest.mark.parametrize("mode", ["interpret", "compiled"])
@pytest.mark.parametrize("mask, h_repeat, repeat_mode, dst_blk_stride, v_r_offset, v_repeat", [
    (128, 2, False, 1, 128, 2),        # pyasc's test case
    (128, 3, True, 2, 256, 2),         # one src1 value per block, spread dst blocks
    (100, 1, False, 1, 128, 3),        # ragged mask: the last lanes of each repeat keep dst
])
def test_bilinear(mode, mask, h_repeat, repeat_mode, dst_blk_stride, v_r_offset, v_repeat):
    rng = np.random.default_rng(7)
    n0 = 1024
    x = rng.uniform(-10, 10, n0).astype(np.float16)
    iters = h_repeat * v_repeat
    off = (rng.permutation(n0 // 16)[:iters * 8] * 32).astype(np.uint32)   # shuffled blocks
    n_off = max(8, off.size)
    off = np.concatenate([off, np.zeros(n_off - off.size, np.uint32)])
    y = rng.uniform(-2, 2, 64).astype(np.float16)
    n_dst = 1024
    z = np.zeros(n_dst, np.float16)
    bilinear_kernel[1](x, off, y, z, n0, n_off, 64, n_dst, mask, h_repeat, repeat_mode,
                       dst_blk_stride, v_r_offset, v_repeat, interpret=(mode == "interpret"))
    want = _reference(np.full(n_dst, 5.0, np.float16), x, off, y, mask, h_repeat, repeat_mode,
                      dst_blk_stride, v_r_offset, v_repeat)
    np.testing.assert_array_equal(z, want)


def test_refuses_an_unaligned_offset():
    x = np.zeros(256, np.float16)
    off = np.arange(8, dtype=np.uint32) * 32
    off[3] = 40
    with pytest.raises(rt.AclError, match=r"bilinear_interpolation: src0_offset\[3\] must be a "
                                          r"32-byte aligned byte offset of a block inside src0, "
                                          r"got 40"):
        bilinear_kernel[1](x, off, np.ones(16, np.float16), np.zeros(128, np.float16), 256, 8,
                           16, 128, 128, 1, False, 1, 128, 1, interpret=True)
