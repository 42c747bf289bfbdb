"""asc.copy(dst, src, mask, repeat_time, CopyRepeatParams): Ascend C's vector Copy between UB
tensors, in both modes (pyasc's generalization/basic/test_copy)."""
import numpy as np
import pytest

import ascendc as asc
import rt

from pyasc_helpers import copy_in, copy_out, gm_tensor


@asc.jit
def copy_kernel(x: asc.GlobalAddress, z: asc.GlobalAddress, n: asc.ConstExpr[int], mask: int,
                repeat: int, dst_stride: int, src_stride: int, dst_rep: int, src_rep: int):
    xg = gm_tensor(x)
    zg = gm_tensor(z)
    pipe = asc.TPipe()
    qx = asc.TQue(asc.TPosition.VECIN, 1)
    qz = asc.TQue(asc.TPosition.VECOUT, 1)
    pipe.init_buffer(que=qx, num=1, len=n * x.dtype.sizeof())
    pipe.init_buffer(que=qz, num=1, len=n * z.dtype.sizeof())
    xl = copy_in(qx, xg, n, x.dtype)
    zl = qz.alloc_tensor(z.dtype)
    asc.duplicate(zl, 0, n)
    params = asc.CopyRepeatParams(dst_stride=dst_stride, src_stride=src_stride,
                                  dst_repeat_size=dst_rep, src_repeat_size=src_rep)
    asc.copy(zl, xl, mask, repeat, params)
    qx.free_tensor(xl)
    copy_out(zg, qz, zl, n, z.dtype)


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


@pytest.mark.parametrize("mode, repeat", [("interpret", 5), ("compiled", 6)])
def test_copy_past_the_tensor_runs_inside_ub_with_a_warning(mode, repeat):
    # the NPU bounds vector accesses by UB only (pyasc's test_copy case (1,) copies 256 elements
    # through 8-element tensors): src's repeats 4, 5 read on into qz's buffer (z[0:64], z[64:128])
    # while every repeat writes z[0:64] (dst_repeat_size 0): the last read decides z[0:64]
    rng = np.random.default_rng(5)
    x = rng.integers(-100, 100, 256).astype(np.float32)
    z = np.full(256, 7, np.float32)
    far = (repeat - 1) * 64 + 63
    with pytest.warns(RuntimeWarning, match=rf"copy: src is read/written past its 256 elements "
                                            rf"\(up to index={far}, UB byte {(far + 1) * 4}\); "
                                            rf"allowed inside UB as on the NPU"):
        copy_kernel[1](x, z, 256, 64, repeat, 1, 1, 0, 8, interpret=(mode == "interpret"))
    exp = np.zeros(256, np.float32)
    if repeat == 5:
        exp[:64] = x[192:256]       # repeat 3's write, read back by repeat 4
    # repeat 6: repeat 5 reads z[64:128], still duplicate's zeros
    np.testing.assert_array_equal(z, exp)


@pytest.mark.parametrize("mode", ["interpret", "compiled"])
def test_copy_refuses_a_repeat_past_the_end_of_ub(mode):
    x = np.zeros(256, np.float32)
    with pytest.raises(rt.AclError, match=r"copy: src must stay inside UB, got index=524343 for "
                                          r"a tensor at UB byte 0 \(\d+ bytes of UB\)"):
        copy_kernel[1](x, np.zeros_like(x), 256, 64, 2, 1, 1, 0, 65535,
                       interpret=(mode == "interpret"))


def test_copy_refuses_a_mask_wider_than_the_lanes():
    x = np.zeros(256, np.float32)
    with pytest.raises(rt.AclError, match=r"copy: mask must be in \[1, 64\], got mask=65"):
        copy_kernel[1](x, np.zeros_like(x), 256, 65, 1, 1, 1, 8, 8, interpret=True)
