"""rt.model's load-time Conv fusion (rt/model/fusion.py): which chains fuse, the memory-plan
safety rules, and fused models matching onnx.reference and the unfused run."""
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

import rt
from rt.atc import convert
from rt.model import fusion

SHAPE = [1, 4, 8, 8]
NBYTES = 4 * 64 * 4


def _t(offset, kind="activation", shape=SHAPE):
    return {"kind": kind, "shape": list(shape), "dtype": "float32", "offset": offset}


def _n(name, op, ins, outs):
    return {"name": name, "op": op, "attrs": {}, "inputs": ins, "outputs": outs}


def _plan(nodes, tensors, outputs=("y",)):
    return [(n["name"], n.get("fusion")) for n, _ in fusion.plan(nodes, tensors, outputs)]


def _block(add_op="Sum"):
    nodes = [_n("conv", "Conv", ["x", "w", "b"], ["c"]), _n("add", add_op, ["res", "c"], ["s"]),
             _n("relu", "Relu", ["s"], ["y"])]
    tensors = {"x": _t(0, "input"), "w": _t(0, "weight"), "b": _t(0, "weight", [4]),
               "res": _t(NBYTES), "c": _t(2 * NBYTES), "s": _t(3 * NBYTES), "y": _t(0, "output")}
    return nodes, tensors


def test_conv_add_relu_chain_fuses_into_one_node():
    nodes, tensors = _block()
    ((fused, originals),) = list(fusion.plan(nodes, tensors, ["y"]))
    assert originals == nodes
    assert fused["name"] == "conv" and fused["inputs"] == ["x", "w", "b", "res"]
    assert fused["outputs"] == ["c", "y"]
    assert fused["fusion"] == {"nodes": ["conv", "add", "relu"], "ops": ["Conv", "Sum", "Relu"],
                               "residual": True, "relu": True}
    assert nodes[0]["outputs"] == ["c"] and "fusion" not in nodes[0]     # originals untouched


def test_conv_relu_and_bias_free_conv():
    nodes = [_n("conv", "Conv", ["x", "w"], ["c"]), _n("relu", "Relu", ["c"], ["y"])]
    tensors = {"x": _t(0, "input"), "w": _t(0, "weight"), "c": _t(0), "y": _t(0, "output")}
    ((fused, _),) = list(fusion.plan(nodes, tensors, ["y"]))
    assert fused["inputs"] == ["x", "w", "", ""] and fused["outputs"] == ["c", "y"]
    assert fused["fusion"]["ops"] == ["Conv", "Relu"] and not fused["fusion"]["residual"]


def test_no_fusion_when_the_conv_output_is_shared_or_a_graph_output_or_not_next():
    nodes, tensors = _block()
    shared = nodes + [_n("other", "Relu", ["c"], ["z"])]
    tensors["z"] = _t(0, "output")
    assert _plan(shared, tensors, ["y", "z"])[0] == ("conv", None)
    assert _plan(nodes, tensors, ["y", "c"])[0] == ("conv", None)
    apart = [nodes[0], _n("mid", "Relu", ["res"], ["m"]), *nodes[1:]]
    tensors["m"] = _t(5 * NBYTES)
    assert [name for name, f in _plan(apart, tensors) if f] == []


def test_relu_left_out_when_its_output_partially_overlaps_an_input():
    nodes, tensors = _block()
    tensors["y"] = _t(NBYTES + 64)             # the plan reused part of the residual's bytes
    (name, f), (relu, rf) = _plan(nodes, tensors)
    assert f["ops"] == ["Conv", "Sum"] and not f["relu"] and (relu, rf) == ("relu", None)
    tensors["y"] = _t(NBYTES)                  # exactly the residual's bytes: in place, fine
    ((name, f),) = _plan(nodes, tensors)
    assert f["ops"] == ["Conv", "Sum", "Relu"]


def test_broadcasting_add_is_not_fused():
    nodes, tensors = _block("Add")
    tensors["res"] = _t(NBYTES, shape=[1, 4, 1, 1])
    assert _plan(nodes, tensors)[0] == ("conv", None)


def _residual_model(seed=0):
    rng = np.random.default_rng(seed)
    f = np.float32
    inits = [numpy_helper.from_array(a, n) for n, a in [
        ("w1", rng.standard_normal((6, 6, 3, 3)).astype(f) * 0.3),
        ("b1", rng.standard_normal(6).astype(f) * 0.1),
        ("w2", rng.standard_normal((6, 6, 1, 1)).astype(f) * 0.3),
        ("b2", rng.standard_normal(6).astype(f) * 0.1),
        ("w3", rng.standard_normal((4, 6, 3, 3)).astype(f) * 0.3)]]
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], name="conv1", kernel_shape=[3, 3],
                         pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
        helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], name="conv2", kernel_shape=[1, 1]),
        helper.make_node("Add", ["x", "c2"], ["s"], name="add"),
        helper.make_node("Relu", ["s"], ["r2"], name="relu2"),
        helper.make_node("Conv", ["r2", "w3"], ["c3"], name="conv3", kernel_shape=[3, 3],
                         strides=[2, 2], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c3"], ["y"], name="relu3"),
    ]
    graph = helper.make_graph(nodes, "residual",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                             [2, 6, 9, 7])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_fused_model_matches_reference_and_unfused(tmp_path, monkeypatch):
    m = _residual_model()
    onnx.save(m, tmp_path / "res.onnx")
    path = convert(str(tmp_path / "res.onnx"), str(tmp_path / "res"), "Ascend910B2")["path"]
    x = np.random.default_rng(1).standard_normal((2, 6, 9, 7)).astype(np.float32)
    ref = ReferenceEvaluator(m).run(None, {"x": x})[0]
    model = rt.Model.load(path)
    fused = {n.name: n.fused for n in model.nodes}
    assert fused["conv1"] == ("conv1", "relu1") and fused["conv3"] == ("conv3", "relu3")
    # relu2 joins only if the plan did not give its output part of conv2's bytes
    assert fused["conv2"] in (("conv2", "add", "relu2"), ("conv2", "add"))
    assert len(model.nodes) == (3 if len(fused["conv2"]) == 3 else 4)
    assert model.engines() == {k: "AI_CORE" for k in
                               ["conv1", "relu1", "conv2", "add", "relu2", "conv3", "relu3"]}
    with rt.profile() as prof:
        (y,) = model.execute([x])
    np.testing.assert_allclose(y, ref, rtol=1e-4, atol=1e-5)
    names = {r.name for r in prof.records if r.kind == "kernel"}
    assert {"conv1 (img2col_kernel)", "conv1 (conv_matmul_kernel)", "conv2 (conv_matmul_kernel)",
            "conv3 (conv_matmul_kernel)"} <= names
    # Conv+Add(+Relu): the residual added by the matmul's own launch (the plan keeps the chain's
    # output apart from the residual and x), no separate epilogue launch
    assert "conv2 (bias_act_kernel)" not in names
    # Conv+Relu: bias and ReLU in the matmul, no vector epilogue (rt.atc plans the Relu's output
    # live from the Conv on, so it never shares bytes with the img2col workspace or x)
    assert "conv1 (bias_act_kernel)" not in names and "conv3 (bias_act_kernel)" not in names
    assert "conv2 (img2col_kernel)" not in names          # 1x1 stride 1: no img2col
    monkeypatch.setenv("ASCEND_EMU_MODEL_NO_FUSION", "1")
    plain = rt.Model.load(path)
    assert len(plain.nodes) == 7 and not any(n.fused for n in plain.nodes)
    (y2,) = plain.execute([x])
    np.testing.assert_allclose(y2, ref, rtol=1e-4, atol=1e-5)


def test_aicpu_only_runs_the_original_nodes(tmp_path, monkeypatch):
    m = _residual_model(2)
    onnx.save(m, tmp_path / "res.onnx")
    path = convert(str(tmp_path / "res.onnx"), str(tmp_path / "res"), "Ascend910B2")["path"]
    monkeypatch.setenv("ASCEND_EMU_MODEL_AICPU_ONLY", "1")
    model = rt.Model.load(path)
    assert len(model.nodes) == 7 and set(model.engines().values()) == {"AI_CPU"}
    x = np.random.default_rng(4).standard_normal((2, 6, 9, 7)).astype(np.float32)
    np.testing.assert_allclose(model.execute([x])[0], ReferenceEvaluator(m).run(None, {"x": x})[0],
                               rtol=1e-5, atol=1e-6)


def test_direct_1x1_conv_needs_no_img2col_workspace():
    """kernels.model_ops.Conv accepts a 1x1 / stride-1 / unpadded Conv without a workspace (the
    matmul reads x in place); any other Conv still needs ATC's img2col workspace."""
    from kernels.model_ops import Conv
    from rt.model.registry import Specs
    w1 = np.ones((8, 4, 1, 1), np.float32)
    w3 = np.ones((8, 4, 3, 3), np.float32)
    x = ((1, 4, 6, 6), "float32")

    def specs(w, ws):
        return Specs([x, (w.shape, "float32")], [((1, 8, 6, 6), "float32")], {1: w}, ws)

    node = {"attrs": {"kernel_shape": [1, 1]}}
    assert Conv().supports(node, specs(w1, 0))
    assert not Conv().supports({"attrs": {"kernel_shape": [1, 1], "strides": [2, 2]}},
                               specs(w1, 0))
    assert not Conv().supports({"attrs": {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]}},
                               specs(w3, 0))
    assert Conv().supports({"attrs": {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]}},
                           specs(w3, 4 * 37 * 36))


def test_executions_after_the_first_replay_the_recorded_launches(tmp_path, monkeypatch):
    """kernels.model_ops.Replayed: the first execution records each node's launches, the next
    ones queue them again without kernel[...](...) (no JitFunction.launch call), with the new
    input's values; a changed setting (interpret mode, checked mode) picks the binary again."""
    import ascendc as asc
    from ascendc import binaries
    from ascendc.jit import JitFunction
    m = _residual_model(3)
    onnx.save(m, tmp_path / "res.onnx")
    path = convert(str(tmp_path / "res.onnx"), str(tmp_path / "res"), "Ascend910B2")["path"]
    model = rt.Model.load(path)
    rng = np.random.default_rng(5)
    xs = [rng.standard_normal((2, 6, 9, 7)).astype(np.float32) for _ in range(4)]
    refs = [ReferenceEvaluator(m).run(None, {"x": x})[0] for x in xs]
    with rt.profile() as first:
        np.testing.assert_allclose(model.execute([xs[0]])[0], refs[0], rtol=1e-4, atol=1e-5)
    calls = []
    orig = JitFunction.launch
    monkeypatch.setattr(JitFunction, "launch", lambda self, *a: calls.append(self) or
                        orig(self, *a))
    with rt.profile() as again:
        np.testing.assert_allclose(model.execute([xs[1]])[0], refs[1], rtol=1e-4, atol=1e-5)
    assert calls == []
    names = [r.name for r in first.records if r.kind == "kernel"]
    assert names and [r.name for r in again.records if r.kind == "kernel"] == names
    plans = [p for n in model.nodes for plan in n.state[1].values() for p in plan]
    assert len(plans) == len(names)
    monkeypatch.setenv("ASCENDC_INTERPRET", "1")
    np.testing.assert_allclose(model.execute([xs[2]])[0], refs[2], rtol=1e-4, atol=1e-5)
    assert all(isinstance(p.binary, binaries.InterpretedBinary) for p in plans)
    monkeypatch.delenv("ASCENDC_INTERPRET")
    was = plans[0].state[1]
    asc.set_default_checked(not was.nan_fill)
    try:
        np.testing.assert_allclose(model.execute([xs[3]])[0], refs[3], rtol=1e-4, atol=1e-5)
        assert all(isinstance(p.binary, binaries.CompiledBinary) for p in plans)
        assert {p.state[1] for p in plans} == {asc.options.resolve(None)} != {was}
    finally:
        asc.set_default_checked(was)
    assert calls == []
