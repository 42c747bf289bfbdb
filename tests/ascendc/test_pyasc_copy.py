"""asc.copy(dst, src, mask, repeat_time, CopyRepeatParams): Ascend C's vector Copy between UB
tensors, in both modes (issue 10 §2.9; pyasc's generalization/basic/test_copy)."""
import numpy as np
import pytest

import ascendc as asc
import rt


@asc.jit
def copy_kernel(x: asc.GlobalAddress, z: asc.GlobalAddress, n: asc.ConstExpr[int], mask: int,
                repeat: int, dst_stride: int, src_stride: int, dst_rep: int, src_rep: int):
    xg = asc.GlobalTensor()
    zg = asc.GlobalTensor()
    xg.set_global_buffer(x)
    zg.set_global_buffer(z)
    pipe = asc.TPipe()
    qx = asc.TQue(asc.TPosition.VECIN, 1)
    qz = asc.TQue(asc.TPosition.VECOUT, 1)
    pipe.init_buffer(que=qx, num=1, len=n * x.dtype.sizeof())
    pipe.init_buffer(que=qz, num=1, len=n * z.dtype.sizeof())
    xl = qx.alloc_tensor(x.dtype)
    asc.data_copy(xl, xg, count=n)
    qx.enque(xl)
    xl = qx.deque(x.dtype)
    zl = qz.alloc_tensor(z.dtype)
    asc.duplicate(zl, 0, n)
    params = asc.CopyRepeatParams(dst_stride=dst_stride, src_stride=src_stride,
                                  dst_repeat_size=dst_rep, src_repeat_size=src_rep)
    asc.copy(zl, xl, mask, repeat, params)
    qz.enque(zl)
    qx.free_tensor(xl)
    zl = qz.deque(z.dtype)
    asc.data_copy(zg, zl, count=n)
    qz.free_tensor(zl)


def _reference(x, mask, repeat, dst_stride, src_stride, dst_rep, src_rep):
    """Lane j of repeat r sits at block r*rep + (j // pb)*stride, element j % pb of it."""
    z = np.zeros_like(x)
    pb = 32 // x.itemsize
    for r in range(repeat):
        for j in range(mask):
            b, e = divmod(j, pb)
            z[(r * dst_rep + b * dst_stride) * pb + e] = x[(r * src_rep + b * src_stride) * pb + e]
    return z


@pytest.mark.parametrize("mode", ["interpret", "compiled"])
@pytest.mark.parametrize("dtype, n, mask, repeat, strides", [
    (np.float32, 1024, 64, 4, (1, 1, 8, 8)),        # pyasc's test_copy case
    (np.int16, 2048, 128, 3, (2, 1, 16, 8)),       # dst blocks spread out
    (np.float16, 2048, 37, 5, (1, 2, 8, 16)),      # ragged mask: part of a block
    (np.int32, 512, 64, 0, (1, 1, 8, 8)),          # no repeats: dst untouched
])
def test_copy_repeat_form(mode, dtype, n, mask, repeat, strides):
    rng = np.random.default_rng(3)
    x = rng.integers(-100, 100, n).astype(dtype)
    z = np.full(n, 7, dtype)
    copy_kernel[1](x, z, n, mask, repeat, *strides, interpret=(mode == "interpret"))
    np.testing.assert_array_equal(z, _reference(x, mask, repeat, *strides))


@pytest.mark.parametrize("mode", ["interpret", "compiled"])
def test_copy_refuses_a_repeat_past_the_tensor(mode):
    x = np.zeros(256, np.float32)
    with pytest.raises(rt.AclError, match=r"copy: src must hold every element the repeats touch, "
                                          r"got index=319 for a tensor of 256 elements"):
        copy_kernel[1](x, np.zeros_like(x), 256, 64, 5, 1, 1, 0, 8,
                       interpret=(mode == "interpret"))


def test_copy_refuses_a_mask_wider_than_the_lanes():
    x = np.zeros(256, np.float32)
    with pytest.raises(rt.AclError, match=r"copy: mask must be in \[1, 64\], got mask=65"):
        copy_kernel[1](x, np.zeros_like(x), 256, 65, 1, 1, 1, 8, 8, interpret=True)
