"""pyasc's TBuf.alloc_tensor / free_tensor (inherited from TQueBind: its one buffer)
and TPipe.init_buffer(buf=, num=) in both modes (pyasc's
kernels/test_bilinear_interpolation uses both)."""
import numpy as np
import pytest

import ascendc as asc


@asc.jit
def scale_via_tbuf(x: asc.GlobalAddress, z: asc.GlobalAddress, n: asc.ConstExpr[int]):
    xg = asc.GlobalTensor()
    zg = asc.GlobalTensor()
    xg.set_global_buffer(x)
    zg.set_global_buffer(z)
    pipe = asc.TPipe()
    qx = asc.TQue(asc.TPosition.VECIN, 1)
    qz = asc.TQue(asc.TPosition.VECOUT, 1)
    tmp_buf = asc.TBuf(asc.TPosition.VECCALC)
    pipe.init_buffer(que=qx, num=1, len=n * x.dtype.sizeof())
    pipe.init_buffer(que=qz, num=1, len=n * z.dtype.sizeof())
    pipe.init_buffer(buf=tmp_buf, num=n * x.dtype.sizeof())
    xl = qx.alloc_tensor(x.dtype)
    asc.data_copy(xl, xg, count=n)
    qx.enque(xl)
    xl = qx.deque(x.dtype)
    tmp = tmp_buf.alloc_tensor(x.dtype)
    asc.muls(tmp, xl, 3.0, count=n)
    zl = qz.alloc_tensor(z.dtype)
    asc.adds(zl, tmp, 1.0, count=n)
    tmp_buf.free_tensor(tmp)
    qz.enque(zl)
    qx.free_tensor(xl)
    zl = qz.deque(z.dtype)
    asc.data_copy(zg, zl, count=n)
    qz.free_tensor(zl)


@pytest.mark.parametrize("mode", ["interpret", "compiled"])
def test_tbuf_alloc_tensor_is_the_whole_buffer(mode):
    x = np.random.default_rng(3).standard_normal(512).astype(np.float32)
    z = np.zeros_like(x)
    scale_via_tbuf[1](x, z, 512, interpret=(mode == "interpret"))
    np.testing.assert_array_equal(z, x * np.float32(3) + np.float32(1))


@asc.jit
def uninitialised_tbuf(x: asc.GlobalAddress):
    asc.TPipe()
    b = asc.TBuf(asc.TPosition.VECCALC)
    t = b.alloc_tensor(asc.float32)
    b.free_tensor(t)


def test_tbuf_alloc_tensor_needs_init_buffer():
    with pytest.raises(Exception, match=r"alloc_tensor: the queue must be initialised with "
                                        r"pipe.init_buffer first, got an uninitialised VECCALC "
                                        r"TBuf"):
        uninitialised_tbuf[1](np.zeros(8, np.float32), interpret=True)
