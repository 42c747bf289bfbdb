"""asc.adv activations (tanh, sigmoid, gelu, silu, swish, swiglu) in both modes against numpy,
float32 and float16, whole tensors and a ragged count; get_mm_config and its parameter structs;
an asc.adv name ascend-emu lacks says so in both modes."""
import numpy as np
import pytest

import ascendc as asc

N = 256
OPS = ("tanh", "sigmoid", "gelu", "silu", "swish", "swiglu")


@asc.jit
def act_kernel(x: asc.GlobalAddress, y: asc.GlobalAddress, z: asc.GlobalAddress, n: int,
               count: int, which: int):
    xg, yg, zg = asc.GlobalTensor(), asc.GlobalTensor(), asc.GlobalTensor()
    xg.set_global_buffer(x, n)
    yg.set_global_buffer(y, n)
    zg.set_global_buffer(z, n)
    pipe = asc.TPipe()
    qi, qo = asc.TQue(asc.TPosition.VECIN, 2), asc.TQue(asc.TPosition.VECOUT, 1)
    pipe.init_buffer(qi, 2, n * x.dtype.sizeof())
    pipe.init_buffer(qo, 1, n * x.dtype.sizeof())
    a, b = qi.alloc_tensor(x.dtype), qi.alloc_tensor(x.dtype)
    asc.data_copy(a, xg, n)
    asc.data_copy(b, yg, n)
    qi.enque(a)
    qi.enque(b)
    a, b = qi.deque(x.dtype), qi.deque(x.dtype)
    o = qo.alloc_tensor(x.dtype)
    asc.duplicate(o, 7.0, n)
    asc.pipe_barrier(asc.PipeID.PIPE_V)
    if which == 0:
        asc.adv.tanh(o, a, count)
    elif which == 1:
        asc.adv.sigmoid(o, a, count=count)
    elif which == 2:
        asc.adv.gelu(o, a, count)
    elif which == 3:
        asc.adv.silu(dst=o, src=a, count=count)
    elif which == 4:
        asc.adv.swish(o, a, 1.5, count)
    else:
        asc.adv.swiglu(o, a, b, scalar_value=0.5, cal_count=count)
    qo.enque(o)
    qi.free_tensor(a)
    qi.free_tensor(b)
    o = qo.deque(x.dtype)
    asc.data_copy(zg, o, n)
    qo.free_tensor(o)


@asc.jit
def whole_tensor_kernel(x: asc.GlobalAddress, z: asc.GlobalAddress, n: asc.ConstExpr[int]):
    xg, zg = asc.GlobalTensor(), asc.GlobalTensor()
    xg.set_global_buffer(x, n)
    zg.set_global_buffer(z, n)
    pipe = asc.TPipe()
    qi, qo = asc.TQue(asc.TPosition.VECIN, 1), asc.TQue(asc.TPosition.VECOUT, 1)
    pipe.init_buffer(qi, 1, n * x.dtype.sizeof())
    pipe.init_buffer(qo, 1, n * x.dtype.sizeof())
    a = qi.alloc_tensor(x.dtype)
    asc.data_copy(a, xg, n)
    qi.enque(a)
    a = qi.deque(x.dtype)
    o = qo.alloc_tensor(x.dtype)
    asc.adv.tanh(o, a)                       # no count: all of dst
    qo.enque(o)
    qi.free_tensor(a)
    o = qo.deque(x.dtype)
    asc.data_copy(zg, o, n)
    qo.free_tensor(o)


def _sig(v):
    return 1.0 / (1.0 + np.exp(-v))


def reference(op, x, y):
    x, y = x.astype(np.float64), y.astype(np.float64)
    return {"tanh": np.tanh(x), "sigmoid": _sig(x),
            "gelu": x * _sig(1.5957691216057308 * (x + 0.044715 * x ** 3)),
            "silu": x * _sig(x), "swish": x * _sig(1.5 * x),
            "swiglu": x * y * _sig(0.5 * y)}[op]


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("dtype,tol", [(np.float32, 2e-6), (np.float16, 4e-3)])
def test_activation_matches_numpy(op, dtype, tol, mode):
    rng = np.random.default_rng(OPS.index(op))
    x = rng.uniform(-6, 6, N).astype(dtype)
    y = rng.uniform(-4, 4, N).astype(dtype)
    z = np.zeros_like(x)
    count = 200                              # ragged: the rest of dst keeps its 7.0
    act_kernel[1](x, y, z, N, count, OPS.index(op), interpret=(mode == "interpret"))
    want = reference(op, x, y)[:count]
    np.testing.assert_allclose(z[:count].astype(np.float64), want, atol=tol * 4, rtol=tol)
    assert np.all(z[count:] == 7.0)


def test_limits_where_exp_overflows(mode):
    x = np.array([-80, -20, -12, 0, 12, 20, 80] + [0] * 9, np.float16)
    z = np.zeros_like(x)
    whole_tensor_kernel[1](x, z, 16, interpret=(mode == "interpret"))
    np.testing.assert_array_equal(z[:7], np.array([-1, -1, -1, 0, 1, 1, 1], np.float16))


def test_activation_runs_on_the_vector_pipe():
    x = np.linspace(-3, 3, N).astype(np.float32)
    z = np.zeros_like(x)
    tl = asc.npu_trace(act_kernel, 1, x, x, z, N, N, OPS.index("gelu"))
    np.testing.assert_allclose(z, reference("gelu", x, x), atol=1e-5, rtol=1e-5)
    pipes = {(ins.name, pipe) for ins, core, pipe, start, end in tl.records
             if ins.name in ("exp", "div", "mul", "muls", "adds", "add")}
    assert {n for n, _ in pipes} == {"exp", "div", "mul", "muls", "adds", "add"}
    assert {p for _, p in pipes} == {"VECTOR"}


@asc.jit
def unknown_adv_kernel(x: asc.GlobalAddress):
    pipe = asc.TPipe()
    q = asc.TQue(asc.TPosition.VECIN, 1)
    pipe.init_buffer(q, 1, 256)
    t = q.alloc_tensor(asc.float32)
    asc.adv.layernorm_v9(t, t)
    q.free_tensor(t)


def test_unknown_adv_name_says_it_is_not_supported(mode):
    with pytest.raises(Exception, match=r"asc.adv.layernorm_v9 is not supported by ascend-emu "
                                        r"\(asc.adv provides: .*swiglu"):
        unknown_adv_kernel[1](np.zeros(8, np.float32), interpret=(mode == "interpret"))
    with pytest.raises(AttributeError, match="asc.adv.nope is not supported"):
        getattr(asc.adv, "nope")


def test_get_mm_config_and_its_params():
    adv = asc.adv
    c = adv.get_mm_config(adv.MatmulShapeParams(128, 256, 64, 64, 128, 32),
                          adv.MatmulConfigMode.CONFIG_MDL,
                          adv.MatmulFuncParams(iterate_order=adv.IterateOrder.ORDER_N,
                                               do_mte2_pre_load=2),
                          adv.MatmulBatchParams(True, adv.BatchMode.BATCH_LARGE_THAN_L1))
    f = c.fields
    assert (f["single_core_m"], f["single_core_n"], f["basic_k"]) == (128, 256, 32)
    assert f["do_norm"] and f["do_multi_data_load"] and not f["do_special_mdl"]
    assert f["iterate_order"] == 1 and f["do_mte2_preload"] == 2 and f["is_n_batch"]
    assert f["batch_mode"] == adv.BatchMode.BATCH_LARGE_THAN_L1
    assert adv.get_mdl_config().fields["do_multi_data_load"]
    assert adv.get_basic_config(64, 64, 32).fields["basic_m"] == 64
    with pytest.raises(ValueError, match=r"asc.adv.get_mm_config: batch_mode must be in "
                                         r"\[1, 2, 3\], got batch_mode=7"):
        adv.get_mm_config(adv.MatmulBatchParams(batch_mode=7))
    with pytest.raises(ValueError, match=r"do_mte2_preload must be in \[0, 1, 2\], got "
                                         r"do_mte2_preload=5"):
        adv.get_mdl_config(do_mte2_preload=5)
    with pytest.raises(TypeError, match="arguments must be MatmulShapeParams"):
        adv.get_mm_config(3)
