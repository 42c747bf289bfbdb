"""rt.atc's node workspaces for Conv: a 1x1 stride-1 unpadded Conv gets none (kernels.conv2d's
direct path reads x in place), every other Conv gets its img2col matrix, and a model whose 1x1
Conv has no workspace still runs it on the AI Core and matches onnx.reference."""
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

import rt
from kernels.conv2d import conv2d_tiling
from rt.atc import convert
from rt.atc.convert import node_workspace
from rt.graph.format import parse, read_file

X = (1, 6, 9, 7)


def _conv(kernel, **attrs):
    return {"name": "c", "op": "Conv", "inputs": ["x", "w"], "outputs": ["y"],
            "attrs": dict(kernel_shape=list(kernel), **attrs)}


def _specs(y_hw):
    return {"x": (X, "float32"), "y": ((1, 8) + y_hw, "float32")}


def test_direct_1x1_conv_has_no_workspace_others_have_img2col():
    assert node_workspace(_conv((1, 1)), _specs((9, 7))) == 0
    assert node_workspace(_conv((1, 1), strides=[1, 1], pads=[0, 0, 0, 0]), _specs((9, 7))) == 0
    # stride 2 or padding: img2col (6 rows + the ones row, of OH*OW floats)
    assert node_workspace(_conv((1, 1), strides=[2, 2]), _specs((5, 4))) == 7 * 5 * 4 * 4
    assert node_workspace(_conv((1, 1), pads=[1, 1, 1, 1]), _specs((11, 9))) == 7 * 11 * 9 * 4
    assert node_workspace(_conv((3, 3), pads=[1, 1, 1, 1]), _specs((9, 7))) == \
        (6 * 9 + 1) * 9 * 7 * 4
    assert node_workspace(_conv((1, 1), group=2), _specs((9, 7))) == 0     # AI CPU anyway


@pytest.mark.parametrize("x,w,stride,pads", [
    ((1, 3, 224, 224), (64, 3, 7, 7), [2, 2], [3, 3, 3, 3]),     # the stride-2 path
    ((1, 128, 14, 14), (128, 128, 3, 3), [2, 2], [1, 1, 1, 1]),   # the taps: less than planned
    ((1, 128, 8, 8), (128, 128, 3, 3), [2, 2], [1, 1, 1, 1]),
    ((1, 4, 9, 12), (8, 4, 3, 2), [1, 2], [0, 1, 2, 0]),
    ((1, 3, 9, 11), (5, 3, 3, 3), [2, 2], [1, 1, 1, 1]),          # odd W: plain img2col
    ((1, 3, 8, 8), (5, 3, 1, 1), [2, 2], [0, 0, 0, 0]),
])
def test_workspace_is_what_kernels_conv2d_uses(x, w, stride, pads):
    t = conv2d_tiling(x, w, stride, pads)
    node = {"name": "c", "op": "Conv", "inputs": ["x", "w"], "outputs": ["y"],
            "attrs": {"kernel_shape": list(w[2:]), "strides": stride, "pads": pads}}
    specs = {"x": (x, "float32"), "y": ((1, w[0], t.oh, t.ow), "float32")}
    if t.tap_wp:        # kernels.conv2d's tap path uses the start of the img2col-sized plan
        assert t.phase is None and node_workspace(node, specs) >= t.col_elems * 4
    else:
        assert node_workspace(node, specs) == t.col_elems * 4


def _model():
    rng = np.random.default_rng(0)
    f = np.float32
    inits = [numpy_helper.from_array(a, n) for n, a in [
        ("w1", rng.standard_normal((8, 6, 1, 1)).astype(f) * 0.3),
        ("b1", rng.standard_normal(8).astype(f) * 0.1),
        ("w2", rng.standard_normal((4, 8, 3, 3)).astype(f) * 0.3)]]
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], name="conv1",
                              kernel_shape=[1, 1]),
             helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
             helper.make_node("Conv", ["r1", "w2"], ["y"], name="conv2", kernel_shape=[3, 3],
                              pads=[1, 1, 1, 1])]
    graph = helper.make_graph(nodes, "pw", [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                                          list(X))],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_model_with_workspace_free_1x1_conv_runs_on_the_ai_core(tmp_path):
    m = _model()
    onnx.save(m, tmp_path / "pw.onnx")
    path = convert(str(tmp_path / "pw.onnx"), str(tmp_path / "pw"), "Ascend910B2")["path"]
    header = parse(read_file(path))[0]
    ws = {n["name"]: n.get("workspace_bytes", 0) for n in header["nodes"]}
    assert ws["conv1"] == 0 and ws["conv2"] == (8 * 9 + 1) * 9 * 7 * 4
    model = rt.Model.load(path)
    assert model.engines()["conv1"] == "AI_CORE"
    x = np.random.default_rng(1).standard_normal(X).astype(np.float32)
    with rt.profile() as prof:
        (y,) = model.execute([x])
    np.testing.assert_allclose(y, ReferenceEvaluator(m).run(None, {"x": x})[0],
                               rtol=1e-4, atol=1e-5)
    names = {r.name for r in prof.records if r.kind == "kernel"}
    assert "conv1 (conv_matmul_kernel)" in names and "conv1 (img2col_kernel)" not in names


@pytest.mark.parametrize("x,s,planned", [
    ((1, 64, 56, 56), 1, (64 * 9 + 1) * 56 * 56),
    ((1, 128, 56, 56), 2, (2 * 128 * 3 * 2 + 1) * 28 * 28 + 128 * 56 * 56),   # the phase plan
])
def test_workspace_covers_the_tap_path(x, s, planned):
    """3x3 pad 1, stride 1 or 2: kernels.conv2d's tap path needs only x with a zero border (four
    phase images and the column split for stride 2), less than the img2col workspace rt.atc
    plans, so the planned workspace is enough."""
    w = (x[1], x[1], 3, 3)
    t = conv2d_tiling(x, w, s, 1)
    assert t.tap_wp and t.phase is None
    node = {"name": "c", "op": "Conv", "inputs": ["x", "w"], "outputs": ["y"],
            "attrs": {"kernel_shape": [3, 3], "strides": [s, s], "pads": [1, 1, 1, 1]}}
    specs = {"x": (x, "float32"), "y": ((1, x[1], t.oh, t.ow), "float32")}
    assert t.col_elems * 4 < node_workspace(node, specs) == planned * 4
