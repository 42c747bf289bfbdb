"""Small ONNX models built with onnx.helper for the model tests (no files shipped)."""
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def _init(name, arr):
    return numpy_helper.from_array(np.asarray(arr), name)


def cnn(seed=0, n=1, c=3, hw=12, oc=8, classes=10, opset=17):
    """Conv(3x3, pad 1) + BatchNorm + Relu + MaxPool(2) + Conv(3x3, stride 2) + Relu +
    GlobalAveragePool + Flatten + Gemm(transB) + Softmax."""
    rng = np.random.default_rng(seed)
    f = np.float32
    inits = [
        _init("w1", rng.standard_normal((oc, c, 3, 3)).astype(f) * 0.3),
        _init("b1", rng.standard_normal(oc).astype(f) * 0.1),
        _init("bn_s", (rng.random(oc) + 0.5).astype(f)),
        _init("bn_b", rng.standard_normal(oc).astype(f) * 0.1),
        _init("bn_m", rng.standard_normal(oc).astype(f) * 0.1),
        _init("bn_v", (rng.random(oc) + 0.5).astype(f)),
        _init("w2", rng.standard_normal((oc, oc, 3, 3)).astype(f) * 0.2),
        _init("fc_w", rng.standard_normal((classes, oc)).astype(f) * 0.5),
        _init("fc_b", rng.standard_normal(classes).astype(f) * 0.1),
    ]
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], name="conv1", kernel_shape=[3, 3],
                         pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization", ["c1", "bn_s", "bn_b", "bn_m", "bn_v"], ["bn1"],
                         name="bn1", epsilon=1e-5),
        helper.make_node("Relu", ["bn1"], ["r1"], name="relu1"),
        helper.make_node("MaxPool", ["r1"], ["p1"], name="pool1", kernel_shape=[2, 2],
                         strides=[2, 2]),
        helper.make_node("Conv", ["p1", "w2"], ["c2"], name="conv2", kernel_shape=[3, 3],
                         pads=[1, 1, 1, 1], strides=[2, 2]),
        helper.make_node("Relu", ["c2"], ["r2"], name="relu2"),
        helper.make_node("GlobalAveragePool", ["r2"], ["g"], name="gap"),
        helper.make_node("Flatten", ["g"], ["flat"], name="flatten", axis=1),
        helper.make_node("Gemm", ["flat", "fc_w", "fc_b"], ["logits"], name="fc", transB=1),
        helper.make_node("Softmax", ["logits"], ["prob"], name="softmax", axis=1),
    ]
    graph = helper.make_graph(
        nodes, "small_cnn",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [n, c, hw, hw])],
        [helper.make_tensor_value_info("prob", TensorProto.FLOAT, [n, classes])], inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    onnx.checker.check_model(m)
    return m


def mlp(seed=0, batch=4, d_in=32, d_hidden=48, d_out=16, opset=17):
    """MatMul + Add(bias) + LayerNormalization + Relu + Mul + Reshape (constant shape from a
    folded Concat) + Gemm + Softmax: the transformer-ish ops."""
    rng = np.random.default_rng(seed)
    f = np.float32
    inits = [
        _init("w1", rng.standard_normal((d_in, d_hidden)).astype(f) * 0.2),
        _init("b1", rng.standard_normal(d_hidden).astype(f) * 0.1),
        _init("ln_g", (rng.random(d_hidden) + 0.5).astype(f)),
        _init("ln_b", rng.standard_normal(d_hidden).astype(f) * 0.1),
        _init("scale", np.full((batch, d_hidden), 0.5, f)),
        _init("s0", np.array([batch], np.int64)), _init("s1", np.array([-1], np.int64)),
        _init("w2", rng.standard_normal((d_hidden, d_out)).astype(f) * 0.2),
    ]
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["h"], name="mm1"),
        helper.make_node("Add", ["h", "b1"], ["hb"], name="bias1"),
        helper.make_node("LayerNormalization", ["hb", "ln_g", "ln_b"], ["ln"], name="ln",
                         axis=-1, epsilon=1e-5),
        helper.make_node("Relu", ["ln"], ["r"], name="relu"),
        helper.make_node("Mul", ["r", "scale"], ["m"], name="mul"),
        helper.make_node("Concat", ["s0", "s1"], ["shape"], name="shape_concat", axis=0),
        helper.make_node("Reshape", ["m", "shape"], ["m2"], name="reshape"),
        helper.make_node("Gemm", ["m2", "w2"], ["y"], name="fc"),
        helper.make_node("Softmax", ["y"], ["prob"], name="softmax", axis=-1),
    ]
    graph = helper.make_graph(
        nodes, "mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, d_in])],
        [helper.make_tensor_value_info("prob", TensorProto.FLOAT, [batch, d_out])], inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    onnx.checker.check_model(m)
    return m


def with_unknown_op():
    node = helper.make_node("NonMaxSuppression", ["b", "s"], ["y"], name="nms")
    graph = helper.make_graph(
        [node], "nms",
        [helper.make_tensor_value_info("b", TensorProto.FLOAT, [1, 4, 4]),
         helper.make_tensor_value_info("s", TensorProto.FLOAT, [1, 1, 4])],
        [helper.make_tensor_value_info("y", TensorProto.INT64, [None, 3])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
