"""A Gemm with one row of A and constant B / bias (a batch-1 classifier) runs as a 1x1 conv
(kernels.model_ops.Gemm: B^T in the cube's L0A order, the bias as the ones-row K term, one
launch); more rows, or a non-constant B, keep kernels.matmul (+ the row-broadcast bias add).
Against onnx.reference, in both modes, on ragged and tile-multiple sizes."""
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

import rt
from rt.atc import convert


def _gemm_model(rows, k, n, trans_b, bias=True, const_b=True, seed=0):
    rng = np.random.default_rng(seed)
    b = rng.standard_normal((n, k) if trans_b else (k, n)).astype(np.float32) * 0.1
    inits = [numpy_helper.from_array(rng.standard_normal(n).astype(np.float32), "c")] \
        if bias else []
    inputs = [helper.make_tensor_value_info("a", TensorProto.FLOAT, [rows, k])]
    if const_b:
        inits.append(numpy_helper.from_array(b, "b"))
    else:
        inputs.append(helper.make_tensor_value_info("b", TensorProto.FLOAT, list(b.shape)))
    attrs = dict(transB=int(trans_b), alpha=0.5, beta=2.0) if const_b else {}  # else plain
    node = helper.make_node("Gemm", ["a", "b"] + (["c"] if bias else []), ["y"], name="fc",
                            **attrs)
    graph = helper.make_graph([node], "gemm", inputs,
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), b


def _run(tmp_path, m, feeds, interpret, monkeypatch):
    onnx.save(m, tmp_path / "g.onnx")
    path = convert(str(tmp_path / "g.onnx"), str(tmp_path / "g"), "Ascend910B2")["path"]
    model = rt.Model.load(path)
    assert model.engines() == {"fc": "AI_CORE"}
    monkeypatch.setenv("ASCENDC_INTERPRET", "1" if interpret else "0")
    with rt.profile() as prof:
        (y,) = model.execute(list(feeds.values()))
    return y, {r.name for r in prof.records if r.kind == "kernel"}


@pytest.mark.parametrize("k,n,trans_b", [(2048, 1000, True), (64, 128, False), (37, 21, True)])
def test_one_row_gemm_runs_as_a_conv(tmp_path, interpret, monkeypatch, k, n, trans_b):
    m, _ = _gemm_model(1, k, n, trans_b, seed=k)
    a = np.random.default_rng(1).standard_normal((1, k)).astype(np.float32)
    y, names = _run(tmp_path, m, {"a": a}, interpret, monkeypatch)
    want = ReferenceEvaluator(m).run(None, {"a": a})[0]
    np.testing.assert_allclose(y, want, rtol=1e-4, atol=1e-4)
    assert names == {"fc (conv_matmul_kernel)"}          # one launch: no bias add, no matmul


def test_one_row_gemm_without_bias(tmp_path, interpret, monkeypatch):
    m, _ = _gemm_model(1, 48, 40, False, bias=False, seed=3)
    a = np.random.default_rng(2).standard_normal((1, 48)).astype(np.float32)
    y, names = _run(tmp_path, m, {"a": a}, interpret, monkeypatch)
    np.testing.assert_allclose(y, ReferenceEvaluator(m).run(None, {"a": a})[0], rtol=1e-4,
                               atol=1e-4)
    assert names == {"fc (conv_matmul_kernel)"}


@pytest.mark.parametrize("rows,const_b", [(3, True), (1, False)])
def test_more_rows_or_a_variable_b_keep_the_matmul(tmp_path, interpret, monkeypatch, rows,
                                                   const_b):
    m, b = _gemm_model(rows, 40, 24, const_b, const_b=const_b, seed=4)
    feeds = {"a": np.random.default_rng(3).standard_normal((rows, 40)).astype(np.float32)}
    if not const_b:
        feeds["b"] = b
    y, names = _run(tmp_path, m, feeds, interpret, monkeypatch)
    np.testing.assert_allclose(y, ReferenceEvaluator(m).run(None, feeds)[0], rtol=1e-4,
                               atol=1e-4)
    assert "fc (matmul_kernel)" in names and "fc (conv_matmul_kernel)" not in names
