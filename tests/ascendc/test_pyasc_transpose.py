"""asc.transpose(dst, src): Ascend C's basic Transpose, one 16 x 16 block of 2-byte elements,
in both modes (pyasc's generalization/basic/test_transpose)."""
import numpy as np
import pytest

import ascendc as asc

from pyasc_helpers import copy_in, copy_out, gm_tensor


@asc.jit
def transpose_kernel(x: asc.GlobalAddress, z: asc.GlobalAddress, n: asc.ConstExpr[int],
                     in_place: asc.ConstExpr[bool]):
    xg = gm_tensor(x)
    zg = gm_tensor(z)
    pipe = asc.TPipe()
    qx = asc.TQue(asc.TPosition.VECIN, 1)
    qz = asc.TQue(asc.TPosition.VECOUT, 1)
    pipe.init_buffer(que=qx, num=1, len=n * x.dtype.sizeof())
    pipe.init_buffer(que=qz, num=1, len=n * z.dtype.sizeof())
    xl = copy_in(qx, xg, n, x.dtype)
    zl = qz.alloc_tensor(z.dtype)
    if in_place:
        asc.transpose(xl, xl)
        asc.adds(zl, xl, 0, count=n)
    else:
        asc.transpose(zl, xl)
    qx.free_tensor(xl)
    copy_out(zg, qz, zl, n, z.dtype)


@pytest.mark.parametrize("mode", ["interpret", "compiled"])
@pytest.mark.parametrize("dtype", [np.float16, np.int16, np.uint16])
def test_transpose_16x16(mode, dtype):
    x = np.random.default_rng(2).integers(0, 1000, (16, 16)).astype(dtype)
    z = np.zeros_like(x)
    transpose_kernel[1](x, z, 256, False, interpret=(mode == "interpret"))
    np.testing.assert_array_equal(z, x.T)


@pytest.mark.parametrize("mode", ["interpret", "compiled"])
def test_transpose_in_place(mode):
    x = np.arange(256, dtype=np.int16).reshape(16, 16)
    z = np.zeros_like(x)
    transpose_kernel[1](x, z, 256, True, interpret=(mode == "interpret"))
    np.testing.assert_array_equal(z, x.T)


def test_transpose_refuses_4_byte_elements():
    x = np.zeros(256, np.float32)
    with pytest.raises(Exception, match=r"transpose: dst and src must have the same 2-byte dtype "
                                        r"\(uint16, int16, float16\), got element sizes dst=4 "
                                        r"src=4"):
        transpose_kernel[1](x, np.zeros_like(x), 256, False, interpret=True)


def test_transpose_needs_a_whole_block():
    x = np.zeros(128, np.float16)
    with pytest.raises(Exception, match=r"transpose: dst must hold count elements, got "
                                        r"count=256 for a tensor of 128 elements in UB"):
        transpose_kernel[1](x, np.zeros_like(x), 128, False, interpret=True)
