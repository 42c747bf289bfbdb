"""rt.Model: converted ONNX models run on the emulated NPU and match onnx.reference."""
import numpy as np
import onnx
import pytest
from onnx.reference import ReferenceEvaluator

import rt
from rt.atc import convert
from rt.opsummary import op_summary

import onnx_models


def _load(tmp_path, model, name):
    path = tmp_path / f"{name}.onnx"
    onnx.save(model, path)
    return rt.Model.load(convert(str(path), str(tmp_path / name), "Ascend910B2")["path"])


@pytest.mark.parametrize("make", [onnx_models.cnn, onnx_models.mlp], ids=["cnn", "mlp"])
def test_model_matches_onnx_reference(tmp_path, make):
    m = make()
    model = _load(tmp_path, m, make.__name__)
    x = np.random.default_rng(3).standard_normal(model.inputs[0].shape).astype(np.float32)
    with rt.profile() as prof:
        (y,) = model.execute([x])
    ref = ReferenceEvaluator(m).run(None, {"x": x})[0]
    np.testing.assert_allclose(y, ref, rtol=1e-4, atol=1e-5)
    engines = model.engines()
    kinds = {r.kind for r in prof.records}
    assert "kernel" in kinds and "aicpu" in kinds
    aicpu = [r.name for r in prof.records if r.kind == "aicpu"]
    assert aicpu == [f"{n.name} (AI_CPU {n.op})" for n in model.nodes if n.engine == "AI_CPU"]
    # per-node rows: AI Core kernels named by their node, AI CPU rows labelled as such
    rows = {r["op_name"]: r for r in op_summary(prof)}
    for n in model.nodes:
        mine = [k for k in rows if k.startswith(n.name + " (")]
        assert mine, (n.name, sorted(rows))
        if n.engine == "AI_CPU":
            assert mine == [f"{n.name} (AI_CPU {n.op})"]
            assert rows[mine[0]]["est_bound_pipe"] == "AI_CPU"
        else:
            assert all(not k.endswith(f"(AI_CPU {n.op})") and k.endswith("_kernel)")
                       for k in mine), mine
    if make is onnx_models.cnn:
        assert engines["conv1"] == engines["pool1"] == engines["fc"] == "AI_CORE"
        assert engines["flatten"] == "AI_CPU"
        names = {r.name for r in prof.records if r.kind == "kernel"}
        assert {"conv1 (img2col_kernel)", "conv1 (conv_matmul_kernel)",
                "pool1 (maxpool_gather_kernel)",
                "softmax (softmax_kernel)"} <= names
    else:
        assert engines["ln"] == engines["mm1"] == engines["bias1"] == "AI_CORE"
        assert engines["reshape"] == "AI_CPU"


def test_descriptions_and_dict_inputs(tmp_path):
    model = _load(tmp_path, onnx_models.cnn(n=2), "cnn2")
    (d,) = model.inputs
    assert (d.name, d.shape, d.dtype, d.size) == ("x", (2, 3, 12, 12), "float32", 2 * 3 * 144 * 4)
    assert [(o.name, o.shape) for o in model.outputs] == [("prob", (2, 10))]
    x = np.random.default_rng(0).standard_normal(d.shape).astype(np.float32)
    (y,) = model.execute({"x": x})
    np.testing.assert_allclose(y.sum(axis=1), 1, rtol=1e-5)
    with pytest.raises(rt.AclError, match="must have shape") as e:
        model.execute([x[:1]])
    assert e.value.code == 100017


def test_async_execution_on_a_stream(tmp_path):
    m = onnx_models.cnn()
    model = _load(tmp_path, m, "cnn")
    x = np.random.default_rng(5).standard_normal(model.inputs[0].shape).astype(np.float32)
    s = rt.Stream()
    start, end = rt.Event(), rt.Event()
    dx = rt.to_device(x)
    out = rt.device_empty(model.outputs[0].shape, np.float32)
    start.record(s)
    (dy,) = model.execute([dx], stream=s, outputs=[out])
    end.record(s)
    assert dy is out
    end.synchronize()
    assert start.elapsed_time(end) > 0
    ref = ReferenceEvaluator(m).run(None, {"x": x})[0]
    np.testing.assert_allclose(out.copy_to_host(), ref, rtol=1e-4, atol=1e-5)


def test_ai_cpu_only_matches_too(tmp_path, monkeypatch):
    monkeypatch.setenv("ASCEND_EMU_MODEL_AICPU_ONLY", "1")
    m = onnx_models.cnn()
    model = _load(tmp_path, m, "cnn")
    assert set(model.engines().values()) == {"AI_CPU"}
    x = np.random.default_rng(9).standard_normal(model.inputs[0].shape).astype(np.float32)
    np.testing.assert_allclose(model.execute([x])[0],
                               ReferenceEvaluator(m).run(None, {"x": x})[0], rtol=1e-5, atol=1e-6)
