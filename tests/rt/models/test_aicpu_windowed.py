"""AI CPU windowed ops (rt/graph/windowed.py: Conv, MaxPool with Indices, AveragePool over 1-D,
2-D and 3-D inputs, ceil_mode, dilations, count_include_pad), the training modes of
BatchNormalization and Dropout, reductions over empty sets and zero-size tensors through rt.atc
and rt.Model. References here are plain per-window loops over ONNX's definitions."""
import itertools

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import rt.onnx_backend as backend
from rt.graph import aicpu


def _out_len(n, k, s, d, pb, pe, ceil):
    span = (k - 1) * d + 1
    room = n + pb + pe - span
    if not ceil:
        return room // s + 1
    o = -(-room // s) + 1
    return o - 1 if (o - 1) * s >= n + pb else o


def _loop_pool(x, k, s, d, pads, ceil, mode, include_pad=0, order=0):
    """Per-window loop: every window position, the taps inside the padded input (explicit pads
    count for include_pad, ceil's overhang never)."""
    nd = x.ndim - 2
    sp = x.shape[2:]
    pb, pe = pads[:nd], pads[nd:]
    out = [_out_len(sp[i], k[i], s[i], d[i], pb[i], pe[i], ceil) for i in range(nd)]
    y = np.zeros(x.shape[:2] + tuple(out), np.float64)
    ind = np.zeros(y.shape, np.int64)
    for n, c in itertools.product(range(x.shape[0]), range(x.shape[1])):
        for o in itertools.product(*[range(v) for v in out]):
            vals, idx, count = [], [], 0
            for t in itertools.product(*[range(v) for v in k]):
                pos = [o[i] * s[i] - pb[i] + t[i] * d[i] for i in range(nd)]
                if any(p >= sp[i] + pe[i] for i, p in enumerate(pos)):
                    continue                                # past the padded input: ceil
                count += 1
                if all(0 <= p < sp[i] for i, p in enumerate(pos)):
                    vals.append(x[(n, c) + tuple(pos)])
                    idx.append(np.ravel_multi_index(pos, sp, order="F" if order else "C"))
            if mode == "max":
                j = int(np.argmax(vals))
                y[(n, c) + o] = vals[j]
                ind[(n, c) + o] = (n * x.shape[1] + c) * int(np.prod(sp)) + idx[j]
            else:
                y[(n, c) + o] = sum(vals) / (count if include_pad else len(vals))
    return y, ind


CASES = [   # shape, kernel, strides, dilations, pads, ceil
    ((2, 3, 11), [3], [2], [1], [1, 0], 1),
    ((1, 2, 9), [2], [1], [3], [0, 2], 0),
    ((1, 2, 7, 9), [3, 2], [2, 3], [1, 2], [1, 0, 1, 1], 1),
    ((2, 1, 8, 8), [2, 2], [2, 2], [1, 1], [0, 0, 0, 0], 0),
    ((1, 2, 5, 6, 7), [2, 3, 2], [2, 1, 3], [2, 1, 1], [1, 0, 1, 0, 1, 1], 1),
    ((1, 1, 4, 4, 4), [2, 2, 2], [1, 1, 1], [1, 1, 1], [0, 0, 0, 0, 0, 0], 0),
]


@pytest.mark.parametrize("shape,k,s,d,pads,ceil", CASES)
@pytest.mark.parametrize("order", [0, 1])
def test_max_pool_nd_values_and_indices_match_a_loop(shape, k, s, d, pads, ceil, order):
    rng = np.random.default_rng(len(shape) + ceil)
    x = rng.standard_normal(shape).astype(np.float32)
    attrs = dict(kernel_shape=k, strides=s, dilations=d, pads=pads, ceil_mode=ceil,
                 storage_order=order)
    y, ind = aicpu.run("MaxPool", attrs, [x])
    ry, rind = _loop_pool(x, k, s, d, pads, ceil, "max", order=order)
    np.testing.assert_array_equal(y, ry.astype(np.float32))
    np.testing.assert_array_equal(ind, rind)
    assert ind.dtype == np.int64 and y.dtype == np.float32


@pytest.mark.parametrize("shape,k,s,d,pads,ceil", CASES)
@pytest.mark.parametrize("include_pad", [0, 1])
def test_average_pool_nd_matches_a_loop(shape, k, s, d, pads, ceil, include_pad):
    x = np.random.default_rng(7).standard_normal(shape).astype(np.float32)
    attrs = dict(kernel_shape=k, strides=s, dilations=d, pads=pads, ceil_mode=ceil,
                 count_include_pad=include_pad)
    (y,) = aicpu.run("AveragePool", attrs, [x])
    ry, _ = _loop_pool(x, k, s, d, pads, ceil, "avg", include_pad)
    np.testing.assert_allclose(y, ry, rtol=1e-5, atol=1e-6)


def test_max_pool_first_of_equal_maxima_and_integer_input():
    x = np.zeros((1, 1, 4), np.int8)
    x[0, 0, 2:] = 5
    y, ind = aicpu.run("MaxPool", {"kernel_shape": [3], "pads": [1, 1]}, [x])
    assert y.tolist() == [[[0, 5, 5, 5]]] and ind.tolist() == [[[0, 2, 2, 2]]]


@pytest.mark.parametrize("shape,group", [((2, 4, 10), 2), ((1, 3, 5, 6, 7), 1)])
def test_conv_1d_and_3d_match_a_loop(shape, group):
    rng = np.random.default_rng(3)
    nd = len(shape) - 2
    x = rng.standard_normal(shape).astype(np.float32)
    oc, k = 4, [3, 2, 2][:nd]
    w = rng.standard_normal((oc, shape[1] // group) + tuple(k)).astype(np.float32)
    b = rng.standard_normal(oc).astype(np.float32)
    s, d, pads = [2, 1, 1][:nd], [1, 2, 1][:nd], [1] * nd + [0] * nd
    (y,) = aicpu.run("Conv", dict(kernel_shape=k, strides=s, dilations=d, pads=pads,
                                  group=group), [x, w, b])
    sp = shape[2:]
    out = [_out_len(sp[i], k[i], s[i], d[i], 1, 0, 0) for i in range(nd)]
    ref = np.zeros((shape[0], oc) + tuple(out))
    xp = np.pad(x, [(0, 0), (0, 0)] + [(1, 0)] * nd).astype(np.float64)
    cg, og = shape[1] // group, oc // group
    for n, o in itertools.product(range(shape[0]), range(oc)):
        gi = o // og
        for p in itertools.product(*[range(v) for v in out]):
            acc = b[o]
            for t in itertools.product(*[range(v) for v in k]):
                pos = tuple(p[i] * s[i] + t[i] * d[i] for i in range(nd))
                xs = xp[(n, slice(gi * cg, (gi + 1) * cg)) + pos]
                acc += (xs * w[(o, slice(None)) + t]).sum()
            ref[(n, o) + p] = acc
    np.testing.assert_allclose(y, ref, rtol=1e-4, atol=1e-4)


def test_conv_refuses_mismatched_ranks_by_message():
    with pytest.raises(ValueError, match=r"Conv: X and W must have the same rank >= 3, got "
                                         r"x.ndim=3 w.ndim=4"):
        aicpu.run("Conv", {}, [np.zeros((1, 1, 4), np.float32),
                               np.zeros((1, 1, 2, 2), np.float32)])


def test_batchnorm_training_mode_outputs_running_statistics():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((3, 2, 4, 5)).astype(np.float32)
    scale, bias = np.array([1.5, 0.5], np.float32), np.array([0.1, -0.2], np.float32)
    mean, var = np.array([0.3, -1.0], np.float32), np.array([2.0, 0.5], np.float32)
    y, rm, rv = aicpu.run("BatchNormalization", {"training_mode": 1, "momentum": 0.8,
                                                 "epsilon": 1e-3}, [x, scale, bias, mean, var])
    bm = x.astype(np.float64).mean(axis=(0, 2, 3))
    bv = x.astype(np.float64).var(axis=(0, 2, 3))
    np.testing.assert_allclose(rm, mean * 0.8 + bm * 0.2, rtol=1e-6)
    np.testing.assert_allclose(rv, var * 0.8 + bv * 0.2, rtol=1e-6)
    ref = (x - bm[:, None, None]) / np.sqrt(bv[:, None, None] + 1e-3) * scale[:, None, None] \
        + bias[:, None, None]
    np.testing.assert_allclose(y, ref, rtol=1e-5, atol=1e-5)
    # inference mode: the given statistics, one output
    (yi,) = aicpu.run("BatchNormalization", {}, [x, scale, bias, mean, var])
    np.testing.assert_allclose(yi, (x - mean[:, None, None]) / np.sqrt(var[:, None, None] + 1e-5)
                               * scale[:, None, None] + bias[:, None, None], rtol=1e-5, atol=1e-5)


def test_dropout_training_mask_follows_the_seed_and_scales():
    x = np.random.default_rng(1).standard_normal((40, 50)).astype(np.float32)
    r, t = np.float32(0.3), np.bool_(True)
    y1, m1 = aicpu.run("Dropout", {"seed": 7}, [x, r, t])
    y2, m2 = aicpu.run("Dropout", {"seed": 7}, [x, r, t])
    _, m3 = aicpu.run("Dropout", {"seed": 8}, [x, r, t])
    assert (m1 == m2).all() and not (m1 == m3).all()
    assert m1.dtype == np.bool_ and abs(m1.mean() - 0.7) < 0.05
    np.testing.assert_allclose(y1, np.where(m1, x / 0.7, 0), rtol=1e-6)
    y0, m0 = aicpu.run("Dropout", {"seed": 7}, [x, np.float32(0.3), np.bool_(False)])
    assert (y0 == x).all() and m0.all()
    with pytest.raises(ValueError, match=r"Dropout: ratio must be in \[0, 1\), got ratio=1.0"):
        aicpu.run("Dropout", {}, [x, np.float32(1.0), t])


@pytest.mark.parametrize("op,dtype,value", [("ReduceMax", np.float32, -np.inf),
                                            ("ReduceMin", np.float32, np.inf),
                                            ("ReduceMax", np.int32, np.iinfo(np.int32).min),
                                            ("ReduceMin", np.uint8, 255),
                                            ("ReduceMax", np.bool_, False)])
@pytest.mark.parametrize("keep", [0, 1])
def test_reduce_over_an_empty_set_gives_the_identity(op, dtype, value, keep):
    x = np.zeros((2, 0, 3), dtype)
    (y,) = aicpu.run(op, {"keepdims": keep}, [x, np.array([1], np.int64)])
    assert y.shape == ((2, 1, 3) if keep else (2, 3)) and y.dtype == dtype
    assert (y == value).all()


def _model(nodes, inputs, outputs, inits=()):
    g = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)])


def test_zero_size_intermediate_and_output_through_atc_and_model():
    """A (2, 0, 4) tensor through Abs (no memory) into ReduceSum (zeros) and out as an output."""
    x_vi = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 0, 4])
    nodes = [helper.make_node("Abs", ["x"], ["a"]),
             helper.make_node("ReduceSum", ["a", "axes"], ["s"], keepdims=1),
             helper.make_node("Relu", ["a"], ["r"])]
    m = _model(nodes, [x_vi], [helper.make_tensor_value_info("s", TensorProto.FLOAT, None),
                               helper.make_tensor_value_info("r", TensorProto.FLOAT, None)],
               [onnx.numpy_helper.from_array(np.array([1], np.int64), "axes")])
    s, r = backend.prepare(m).run([np.zeros((2, 0, 4), np.float32)])
    assert s.shape == (2, 1, 4) and (s == 0).all()
    assert r.shape == (2, 0, 4) and r.dtype == np.float32


def test_reshape_target_computed_from_shape_is_folded_by_atc():
    """Shape -> Slice -> Div -> Concat -> Reshape (ONNX shape inference leaves the target open):
    ATC folds the chain and the Reshape gets a static shape."""
    x_vi = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 6, 4])
    c = {n: onnx.numpy_helper.from_array(np.array(v, np.int64), n)
         for n, v in (("one", [1]), ("two", [2]), ("zero", [0]), ("four", [4]))}
    nodes = [helper.make_node("Shape", ["x"], ["sh"]),
             helper.make_node("Slice", ["sh", "one", "two"], ["c"]),
             helper.make_node("Div", ["c", "two"], ["half"]),
             helper.make_node("Slice", ["sh", "zero", "one"], ["n"]),
             helper.make_node("Concat", ["n", "half", "two", "four"], ["tgt"], axis=0),
             helper.make_node("Reshape", ["x", "tgt"], ["y"])]
    m = _model(nodes, [x_vi], [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
               c.values())
    x = np.arange(48, dtype=np.float32).reshape(2, 6, 4)
    (y,) = backend.prepare(m).run([x])
    np.testing.assert_array_equal(y, x.reshape(2, 3, 2, 4))


@pytest.mark.parametrize("mode", ["SAME_UPPER", "SAME_LOWER", "VALID"])
@pytest.mark.parametrize("shape,k,s", [((1, 2, 10), [4], [3]), ((1, 1, 5, 7, 6), [2, 3, 3],
                                                                 [2, 2, 1])])
def test_auto_pad_on_1d_and_3d_inputs_through_atc(mode, shape, k, s):
    """auto_pad on non-2-D inputs (ATC writes out pads for 2-D ones): ONNX's rule, out =
    ceil(in / stride), the odd padding element at the end (UPPER) or the start (LOWER)."""
    nd = len(k)
    x = np.random.default_rng(11).standard_normal(shape).astype(np.float32)
    pb, pe = [0] * nd, [0] * nd
    for i in range(nd):
        if mode != "VALID":
            out = -(-shape[2 + i] // s[i])
            total = max((out - 1) * s[i] + k[i] - shape[2 + i], 0)
            small = total // 2
            pb[i], pe[i] = (small, total - small) if mode == "SAME_UPPER" else \
                (total - small, small)
    rmax, _ = _loop_pool(x, k, s, [1] * nd, pb + pe, 0, "max")
    ravg, _ = _loop_pool(x, k, s, [1] * nd, pb + pe, 0, "avg", 0)
    x_vi = helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape))
    nodes = [helper.make_node("MaxPool", ["x"], ["m"], kernel_shape=k, strides=s, auto_pad=mode),
             helper.make_node("AveragePool", ["x"], ["a"], kernel_shape=k, strides=s,
                              auto_pad=mode)]
    m = _model(nodes, [x_vi], [helper.make_tensor_value_info("m", TensorProto.FLOAT, None),
                               helper.make_tensor_value_info("a", TensorProto.FLOAT, None)])
    ym, ya = backend.prepare(m).run([x])
    np.testing.assert_array_equal(ym, rmax.astype(np.float32))
    np.testing.assert_allclose(ya, ravg, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("shape", [(0, 3, 8, 8), (2, 0, 8)])
def test_pooling_and_conv_of_zero_size_batches_or_channels(shape):
    nd = len(shape) - 2
    x = np.zeros(shape, np.float32)
    y, ind = aicpu.run("MaxPool", {"kernel_shape": [2] * nd}, [x])
    (a,) = aicpu.run("AveragePool", {"kernel_shape": [2] * nd}, [x])
    out = shape[:2] + (shape[2] - 1,) * nd
    assert y.shape == ind.shape == a.shape == out and ind.dtype == np.int64
    w = np.ones((4, shape[1]) + (2,) * nd, np.float32)
    (c,) = aicpu.run("Conv", {}, [x, w])
    assert c.shape == (shape[0], 4) + (shape[2] - 1,) * nd and not c.any()


def test_lazy_outputs_compute_each_output_once_and_only_when_read():
    from rt.graph.windowed import LazyOutputs
    calls = []
    outs = LazyOutputs(lambda: calls.append(0) or "y", lambda: calls.append(1) or "i")
    for _dst, val in zip(["only Y is bound"], outs):     # as the executor binds the results
        assert val == "y"
    assert calls == [0] and len(outs) == 2
    assert outs[-1] == "i" and outs[1] == "i" and outs[:2] == ["y", "i"] and calls == [0, 1]
    with pytest.raises(IndexError):
        outs[2]


def test_conv_then_training_mode_batchnorm_through_atc_and_model():
    """Conv -> BatchNormalization(training_mode=1): normalised by the batch's statistics, the
    running ones as outputs (ATC folds the pair only in inference mode)."""
    rng = np.random.default_rng(9)
    x = rng.standard_normal((2, 3, 6, 6)).astype(np.float32)
    w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    stats = [np.full(4, v, np.float32) for v in (2.0, 0.5, 10.0, 3.0)]   # scale, B, mean, var
    inits = [onnx.numpy_helper.from_array(w, "w")] + [
        onnx.numpy_helper.from_array(v, n) for v, n in zip(stats, ("s", "b", "m", "v"))]
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], kernel_shape=[3, 3]),
             helper.make_node("BatchNormalization", ["c", "s", "b", "m", "v"], ["y", "rm", "rv"],
                              training_mode=1, momentum=0.75)]
    m = _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 6, 6])],
               [helper.make_tensor_value_info(n, TensorProto.FLOAT, None)
                for n in ("y", "rm", "rv")], inits)
    y, rm, rv = backend.prepare(m).run([x])
    (c,) = aicpu.run("Conv", {"kernel_shape": [3, 3]}, [x, w])
    c64 = c.astype(np.float64)
    mu, var = c64.mean(axis=(0, 2, 3), keepdims=True), c64.var(axis=(0, 2, 3), keepdims=True)
    np.testing.assert_allclose(y, 2.0 * (c64 - mu) / np.sqrt(var + 1e-5) + 0.5, rtol=1e-4,
                               atol=1e-4)
    np.testing.assert_allclose(rm, 10.0 * 0.75 + mu.ravel() * 0.25, rtol=1e-5)
    np.testing.assert_allclose(rv, 3.0 * 0.75 + var.ravel() * 0.25, rtol=1e-5)
