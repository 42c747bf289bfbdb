"""asc.transpose(dst, src, shared_tmp_buffer, TransposeParamsExt): Ascend C's enhanced Transpose
([N,C,H,W] <-> [N,H,W,C], and the 16 x 16 ND2ND_B16 form), in both modes, with the tmp buffer in
a TQue(VECCALC) as pyasc's generalization/basic/test_transpose_ext declares it."""
import numpy as np
import pytest

import ascendc as asc
import rt
from ascendc.lang.params import TransposeType

from pyasc_helpers import copy_in, copy_out, gm_tensor


@asc.jit
def transpose_ext_kernel(x: asc.GlobalAddress, z: asc.GlobalAddress, total: int, n: int, c: int,
                         h: int, w: int, kind: int, in_place: asc.ConstExpr[bool]):
    xg = gm_tensor(x)
    zg = gm_tensor(z)
    pipe = asc.TPipe()
    qx = asc.TQue(asc.TPosition.VECIN, 1)
    qz = asc.TQue(asc.TPosition.VECOUT, 1)
    qt = asc.TQue(asc.TPosition.VECCALC, 1)
    pipe.init_buffer(que=qx, num=1, len=total * x.dtype.sizeof())
    pipe.init_buffer(que=qz, num=1, len=total * z.dtype.sizeof())
    pipe.init_buffer(que=qt, num=1, len=(c + 2) * 16 * 8 * 4)
    xl = copy_in(qx, xg, total, x.dtype)
    zl = qz.alloc_tensor(z.dtype)
    tmp = qt.alloc_tensor(asc.uint8)
    params = asc.TransposeParamsExt(n_size=n, c_size=c, h_size=h, w_size=w,
                                    transpose_type=kind)
    if in_place:
        asc.transpose(xl, xl, tmp, params)
        asc.data_copy(zl, xl, count=total)
    else:
        asc.transpose(zl, xl, tmp, params)
    qx.free_tensor(xl)
    qt.free_tensor(tmp)
    copy_out(zg, qz, zl, total, z.dtype)


@asc.jit
def literal_kind_kernel(x: asc.GlobalAddress, z: asc.GlobalAddress):
    """pyasc's spelling: the enum member written in the kernel."""
    xg = gm_tensor(x)
    zg = gm_tensor(z)
    pipe = asc.TPipe()
    qx = asc.TQue(asc.TPosition.VECIN, 1)
    qz = asc.TQue(asc.TPosition.VECOUT, 1)
    qt = asc.TQue(asc.TPosition.VECCALC, 1)
    pipe.init_buffer(que=qx, num=1, len=256 * 2)
    pipe.init_buffer(que=qz, num=1, len=256 * 2)
    pipe.init_buffer(que=qt, num=1, len=(16 + 2) * 16 * 16 * 2)
    xl = copy_in(qx, xg, 256, x.dtype)
    zl = qz.alloc_tensor(z.dtype)
    tmp = qt.alloc_tensor(asc.uint8)
    params = asc.TransposeParamsExt(n_size=1, c_size=16, h_size=4, w_size=4,
                                    transpose_type=TransposeType.TRANSPOSE_NCHW2NHWC)
    asc.transpose(zl, xl, tmp, params)
    qx.free_tensor(xl)
    qt.free_tensor(tmp)
    copy_out(zg, qz, zl, 256, z.dtype)


NCHW2NHWC = int(TransposeType.TRANSPOSE_NCHW2NHWC)
NHWC2NCHW = int(TransposeType.TRANSPOSE_NHWC2NCHW)
ND2ND_B16 = int(TransposeType.TRANSPOSE_ND2ND_B16)


@pytest.mark.parametrize("mode", ["interpret", "compiled"])
@pytest.mark.parametrize("dtype, shape", [
    (np.float16, (1, 16, 4, 4)),        # pyasc's test_transpose_ext case
    (np.int32, (2, 3, 5, 8)),           # ragged: c and h not multiples of anything
    (np.int8, (1, 5, 4, 8)),
])
def test_nchw_to_nhwc_and_back(mode, dtype, shape):
    interpret = mode == "interpret"
    x = np.random.default_rng(4).integers(-50, 50, shape).astype(dtype)
    z = np.zeros(x.size, dtype)
    transpose_ext_kernel[1](x, z, x.size, *shape, NCHW2NHWC, False, interpret=interpret)
    nhwc = x.transpose(0, 2, 3, 1)
    np.testing.assert_array_equal(z, nhwc.ravel())
    back = np.zeros(x.size, dtype)
    transpose_ext_kernel[1](z, back, x.size, *shape, NHWC2NCHW, False, interpret=interpret)
    np.testing.assert_array_equal(back, x.ravel())


@pytest.mark.parametrize("mode", ["interpret", "compiled"])
def test_enum_member_in_the_kernel(mode):
    x = np.arange(256, dtype=np.float16).reshape(1, 16, 4, 4)
    z = np.zeros(256, np.float16)
    literal_kind_kernel[1](x, z, interpret=(mode == "interpret"))
    np.testing.assert_array_equal(z, x.transpose(0, 2, 3, 1).ravel())


@pytest.mark.parametrize("mode", ["interpret", "compiled"])
def test_nd2nd_b16_in_place(mode):
    x = np.arange(256, dtype=np.uint16)
    z = np.zeros_like(x)
    transpose_ext_kernel[1](x, z, 256, 1, 16, 4, 4, ND2ND_B16, True,
                            interpret=(mode == "interpret"))
    np.testing.assert_array_equal(z, x.reshape(16, 16).T.ravel())


@pytest.mark.parametrize("kind, in_place, message", [
    (int(TransposeType.TRANSPOSE_NZ2ND_0213), False,
     r"transpose: params.transpose_type must be TRANSPOSE_ND2ND_B16, TRANSPOSE_NCHW2NHWC or "
     r"TRANSPOSE_NHWC2NCHW \(the others are reserved in Ascend C\), got transpose_type=1"),
    (NCHW2NHWC, True, r"transpose: dst must not be src for TRANSPOSE_NCHW2NHWC"),
])
def test_refusals(kind, in_place, message):
    x = np.zeros(256, np.float16)
    with pytest.raises(rt.AclError, match=message):
        transpose_ext_kernel[1](x, np.zeros_like(x), 256, 1, 16, 4, 4, kind, in_place,
                                interpret=True)


def test_nd2nd_b16_takes_uint16_only():
    x = np.zeros(256, np.float16)
    with pytest.raises(rt.AclError, match=r"transpose: TRANSPOSE_ND2ND_B16 takes uint16 on Atlas "
                                          r"A2 \(use the 2-argument transpose for "
                                          r"int16/float16\)"):
        transpose_ext_kernel[1](x, np.zeros_like(x), 256, 1, 16, 4, 4, ND2ND_B16, True,
                                interpret=True)


def test_refuses_a_shape_larger_than_the_tensors():
    x = np.zeros(256, np.float16)
    with pytest.raises(rt.AclError, match=r"transpose: dst must hold count elements, got "
                                          r"count=512 for a tensor of 256 elements in UB"):
        # c=32 makes the shape 512 elements; the buffers hold 256
        transpose_ext_kernel[1](x, np.zeros_like(x), 256, 1, 32, 4, 4, NCHW2NHWC, False,
                                interpret=True)
