"""asc.adv.rmsnorm / RmsNormTiling in both modes against numpy: a tiling passed from the host
and one built in the kernel, rows whose data (original_h_length) is shorter than their stride,
float32 and float16; the form without temp_buffer is refused by message in both modes."""
import numpy as np
import pytest

import ascendc as asc


@asc.jit
def rms_kernel(x: asc.GlobalAddress, g: asc.GlobalAddress, z: asc.GlobalAddress, tiling,
               rows: int, h: int, oh: int, eps: float, in_kernel: int):
    xg, gg, zg = asc.GlobalTensor(), asc.GlobalTensor(), asc.GlobalTensor()
    xg.set_global_buffer(x, rows * h)
    gg.set_global_buffer(g, h)
    zg.set_global_buffer(z, rows * h)
    pipe = asc.TPipe()
    qi, qg, qo = asc.TQue(asc.TPosition.VECIN, 1), asc.TQue(asc.TPosition.VECIN, 1), \
        asc.TQue(asc.TPosition.VECOUT, 1)
    tb = asc.TBuf(asc.TPosition.VECCALC)
    pipe.init_buffer(qi, 1, rows * h * x.dtype.sizeof())
    pipe.init_buffer(qg, 1, h * x.dtype.sizeof())
    pipe.init_buffer(qo, 1, rows * h * x.dtype.sizeof())
    pipe.init_buffer(buf=tb, num=(2 * h + 64) * x.dtype.sizeof())
    a, gl = qi.alloc_tensor(x.dtype), qg.alloc_tensor(x.dtype)
    asc.data_copy(a, xg, rows * h)
    asc.data_copy(gl, gg, h)
    qi.enque(a)
    qg.enque(gl)
    a, gl = qi.deque(x.dtype), qg.deque(x.dtype)
    o = qo.alloc_tensor(x.dtype)
    asc.duplicate(o, 0.0, rows * h)     # rmsnorm writes the original columns; all are copied out
    tmp = tb.get(asc.uint8)
    if in_kernel == 1:
        mine = asc.adv.RmsNormTiling(b_length=2, s_length=rows // 2, h_length=h,
                                     original_h_length=oh)
        asc.adv.rmsnorm(o, a, gl, eps, mine, temp_buffer=tmp)
    else:
        asc.adv.rmsnorm(o, a, gl, eps, tiling, tmp)
    qo.enque(o)
    qi.free_tensor(a)
    qg.free_tensor(gl)
    o = qo.deque(x.dtype)
    asc.data_copy(zg, o, rows * h)
    qo.free_tensor(o)


@pytest.mark.parametrize("dtype,tol", [(np.float32, 1e-5), (np.float16, 3e-3)])
@pytest.mark.parametrize("in_kernel", [0, 1])
def test_rmsnorm_matches_numpy(dtype, tol, in_kernel, mode):
    rows, h, oh, eps = 4, 64, 50, 1e-5
    rng = np.random.default_rng(in_kernel)
    x = rng.standard_normal((rows, h)).astype(dtype)
    g = rng.standard_normal(h).astype(dtype)
    t = asc.adv.RmsNormTiling(b_length=1, s_length=rows, h_length=h, original_h_length=oh,
                              reciprocal_of_h_length=1.0 / oh)
    z = np.zeros_like(x)
    rms_kernel[1](x, g, z, t, rows, h, oh, eps, in_kernel, interpret=(mode == "interpret"))
    x64 = x.astype(np.float64)[:, :oh]
    want = x64 / np.sqrt((x64 ** 2).mean(axis=1, keepdims=True) + eps) * g[:oh]
    np.testing.assert_allclose(z[:, :oh].astype(np.float64), want, rtol=tol, atol=tol)


@asc.jit
def rms_without_temp(x: asc.GlobalAddress, tiling):
    pipe = asc.TPipe()
    q = asc.TQue(asc.TPosition.VECIN, 1)
    pipe.init_buffer(q, 1, 256)
    t = q.alloc_tensor(asc.float32)
    asc.adv.rmsnorm(t, t, t, 1e-5, tiling)
    q.free_tensor(t)


def test_rmsnorm_needs_temp_buffer(mode):
    t = asc.adv.RmsNormTiling(b_length=1, s_length=1, h_length=64, original_h_length=64)
    with pytest.raises(Exception, match=r"asc.adv.rmsnorm: temp_buffer must be given"):
        rms_without_temp[1](np.zeros(8, np.float32), t, interpret=(mode == "interpret"))


def test_rms_norm_tiling_fields():
    t = asc.adv.RmsNormTiling(h_length=64)
    assert t.h_length == 64 and t.reciprocal_of_h_length == 0.0
    with pytest.raises(AttributeError, match="RmsNormTiling: field must be one of"):
        t.h = 3
    with pytest.raises(ValueError, match=r"RmsNormTiling: b_length must be an int32, got "
                                         r"b_length=1.5"):
        t.b_length = 1.5


@asc.jit
def ln_kernel(x: asc.GlobalAddress, g: asc.GlobalAddress, bt: asc.GlobalAddress,
              z: asc.GlobalAddress, mv: asc.GlobalAddress, tiling, rows: int, h: int,
              eps: float):
    xg, gg, bg, zg, mg = asc.GlobalTensor(), asc.GlobalTensor(), asc.GlobalTensor(), \
        asc.GlobalTensor(), asc.GlobalTensor()
    xg.set_global_buffer(x, rows * h)
    gg.set_global_buffer(g, h)
    bg.set_global_buffer(bt, h)
    zg.set_global_buffer(z, rows * h)
    mg.set_global_buffer(mv, 16)
    pipe = asc.TPipe()
    qi, qo, qm = asc.TQue(asc.TPosition.VECIN, 3), asc.TQue(asc.TPosition.VECOUT, 1), \
        asc.TQue(asc.TPosition.VECOUT, 1)
    tb = asc.TBuf(asc.TPosition.VECCALC)
    pipe.init_buffer(qi, 3, rows * h * 4)
    pipe.init_buffer(qo, 1, rows * h * 4)
    pipe.init_buffer(qm, 1, 64)
    pipe.init_buffer(buf=tb, num=(2 * h + 64) * 4)
    a, gl, bl = qi.alloc_tensor(x.dtype), qi.alloc_tensor(x.dtype), qi.alloc_tensor(x.dtype)
    asc.data_copy(a, xg, rows * h)
    asc.data_copy(gl, gg, h)
    asc.data_copy(bl, bg, h)
    qi.enque(a)
    qi.enque(gl)
    qi.enque(bl)
    a, gl, bl = qi.deque(x.dtype), qi.deque(x.dtype), qi.deque(x.dtype)
    o, m = qo.alloc_tensor(x.dtype), qm.alloc_tensor(x.dtype)
    asc.duplicate(o, 0.0, rows * h)     # layernorm writes the original columns; all are copied out
    asc.adv.layernorm(o, m, m[8:], a, gl, bl, eps, tiling, shared_tmp_buffer=tb.get(asc.uint8))
    qo.enque(o)
    qm.enque(m)
    qi.free_tensor(a)
    qi.free_tensor(gl)
    qi.free_tensor(bl)
    o, m = qo.deque(x.dtype), qm.deque(x.dtype)
    asc.data_copy(zg, o, rows * h)
    asc.data_copy(mg, m, 16)
    qo.free_tensor(o)
    qm.free_tensor(m)


def test_layernorm_matches_numpy(mode):
    rows, h, oh, eps = 4, 64, 56, 1e-5
    rng = np.random.default_rng(5)
    x = (rng.standard_normal((rows, h)) * 2 + 1).astype(np.float32)
    g = rng.standard_normal(h).astype(np.float32)
    b = rng.standard_normal(h).astype(np.float32)
    t = asc.adv.LayerNormTiling(b_length=2, s_length=2, h_length=h, original_h_length=oh)
    z = np.zeros_like(x)
    mv = np.zeros(16, np.float32)
    ln_kernel[1](x, g, b, z, mv, t, rows, h, eps, interpret=(mode == "interpret"))
    d = x[:, :oh].astype(np.float64)
    mean, var = d.mean(1), d.var(1)
    want = (d - mean[:, None]) / np.sqrt(var[:, None] + eps) * g[:oh] + b[:oh]
    np.testing.assert_allclose(z[:, :oh], want, rtol=2e-5, atol=2e-5)
    np.testing.assert_allclose(mv[:rows], mean, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(mv[8:8 + rows], var, rtol=1e-5, atol=1e-6)
