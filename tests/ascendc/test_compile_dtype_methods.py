"""`asc.<dtype>.sizeof()` / `.is_float()` on a dtype constant inside a kernel (pyasc's
trans_5hd_addr_tensor and adv quant tests size buffers with `asc.uint64.sizeof()`): a compile-time
constant in compiled mode, a plain call when interpreted."""
import numpy as np
import pytest

import ascendc as asc

from pyasc_helpers import copy_in, copy_out, gm_tensor


@asc.jit
def copy_scaled_by_sizes(x: asc.GlobalAddress, z: asc.GlobalAddress, n: asc.ConstExpr[int]):
    xg = gm_tensor(x)
    zg = gm_tensor(z)
    pipe = asc.TPipe()
    qx = asc.TQue(asc.TPosition.VECIN, 1)
    qz = asc.TQue(asc.TPosition.VECOUT, 1)
    pipe.init_buffer(que=qx, num=1, len=n * asc.float32.sizeof())
    pipe.init_buffer(que=qz, num=1, len=n * asc.float32.sizeof())
    xl = copy_in(qx, xg, n, x.dtype)
    zl = qz.alloc_tensor(z.dtype)
    scale = asc.uint64.sizeof() + asc.int8.sizeof()      # 8 + 1
    if asc.float16.is_float():
        scale = scale * 2
    asc.muls(zl, xl, float(scale), count=n)
    qx.free_tensor(xl)
    copy_out(zg, qz, zl, n, z.dtype)


@pytest.mark.parametrize("mode", ["interpret", "compiled"])
def test_dtype_methods_are_constants(mode):
    x = np.arange(64, dtype=np.float32)
    z = np.zeros_like(x)
    copy_scaled_by_sizes[1](x, z, 64, interpret=mode == "interpret")
    np.testing.assert_array_equal(z, x * 18)


@asc.jit
def uses_dtype_attribute_call(z: asc.GlobalAddress):
    n = asc.int8.no_such_method()
    zg = asc.GlobalTensor()
    zg.set_global_buffer(z + n)


def test_unknown_dtype_method_is_refused_at_its_line():
    with pytest.raises(Exception, match=r"asc.int8.no_such_method\(\) must be a dtype method "
                                        r"with a constant int or bool result"):
        uses_dtype_attribute_call[1](np.zeros(8, np.float32))
