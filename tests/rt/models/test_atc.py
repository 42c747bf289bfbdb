"""python -m rt.atc: passes, the file format, and refusals (unknown ops, bad files)."""
import json
import struct

import numpy as np
import onnx
import pytest

import rt
from rt.atc import AtcError, convert
from rt.atc.__main__ import main as atc_main
from rt.graph import format as fmt

import onnx_models


@pytest.fixture
def cnn_om(tmp_path):
    path = tmp_path / "cnn.onnx"
    onnx.save(onnx_models.cnn(), path)
    summary = convert(str(path), str(tmp_path / "cnn"), "Ascend910B2")
    return summary


def test_conversion_folds_batchnorm_normalises_gemm_and_plans_memory(cnn_om):
    assert cnn_om["path"].endswith("cnn.om")
    assert cnn_om["batchnorm_folded"] == 1 and cnn_om["gemm_normalised"] == 1
    assert "BatchNormalization" not in cnn_om["ops"]
    assert cnn_om["ops"]["Conv"] == 2
    assert 0 < cnn_om["workspace_bytes"] < cnn_om["workspace_bytes_without_reuse"]
    header, blob = fmt.parse(open(cnn_om["path"], "rb").read())
    assert header["workspace_bytes"] == cnn_om["workspace_bytes"]
    assert rt.model.query_size(cnn_om["path"]) == (header["workspace_bytes"],
                                                    header["weight_bytes"])
    acts = [t for t in header["tensors"].values() if t["kind"] == "activation"]
    assert acts and all(t["offset"] % 64 == 0 for t in acts)


def test_constant_folding_and_input_shape(tmp_path):
    path = tmp_path / "mlp.onnx"
    m = onnx_models.mlp(batch=4)
    onnx.save(m, path)
    s = convert(str(path), str(tmp_path / "mlp"), "Ascend910B2", input_shape="x:4,32")
    assert s["folded_nodes"] == 1 and "Concat" not in s["ops"]
    with pytest.raises(AtcError, match="must have 2 dims"):
        convert(str(path), str(tmp_path / "bad"), "Ascend910B2", input_shape="x:1,4,32")
    with pytest.raises(AtcError, match="not model inputs"):
        convert(str(path), str(tmp_path / "bad"), "Ascend910B2", input_shape="y:4,32")


def test_dynamic_dims_need_input_shape(tmp_path):
    m = onnx_models.cnn()
    m.graph.input[0].type.tensor_type.shape.dim[0].dim_param = "batch"
    path = tmp_path / "dyn.onnx"
    onnx.save(m, path)
    with pytest.raises(AtcError, match="dynamic dim .*--input_shape"):
        convert(str(path), str(tmp_path / "dyn"), "Ascend910B2")
    s = convert(str(path), str(tmp_path / "dyn"), "Ascend910B2", input_shape="x:2,3,12,12")
    header, _ = fmt.parse(open(s["path"], "rb").read())
    assert header["tensors"]["prob"]["shape"] == [2, 10]


def test_unknown_op_is_refused_with_its_name(tmp_path):
    path = tmp_path / "nms.onnx"
    onnx.save(onnx_models.with_unknown_op(), path)
    with pytest.raises(AtcError, match="unsupported op.*'NonMaxSuppression'.*nms"):
        convert(str(path), str(tmp_path / "nms"), "Ascend910B2")
    assert not (tmp_path / "nms.om").exists()


def test_cli(tmp_path, capsys):
    path = tmp_path / "cnn.onnx"
    onnx.save(onnx_models.cnn(), path)
    assert atc_main(["--model", str(path), "--output", str(tmp_path / "m"),
                     "--soc_version", "Ascend910B2", "--input_shape", "x:1,3,12,12"]) == 0
    out = capsys.readouterr().out
    assert "ATC run success" in out and "BatchNorm folded" in out
    assert atc_main(["--model", str(path), "--output", str(tmp_path / "m"),
                     "--soc_version", "Ascend999"]) == 1
    assert "soc_version must be one of" in capsys.readouterr().err
    assert atc_main(["--model", str(path), "--output", str(tmp_path / "m"),
                     "--soc_version", "Ascend910B2", "--dynamic_batch_size", "1,0"]) == 1
    assert "dynamic_batch_size must list 1 to 100 distinct sizes >= 1" in \
        capsys.readouterr().err


# ---- bad files -----------------------------------------------------------------------------------

def _bytes(cnn_om):
    return bytearray(open(cnn_om["path"], "rb").read())


def _refused(data, tmp_path, code, match):
    p = tmp_path / "bad.om"
    p.write_bytes(bytes(data))
    with pytest.raises(rt.AclError, match=match) as e:
        rt.Model.load(str(p))
    assert e.value.code == code
    return e.value


def test_truncated_file(cnn_om, tmp_path):
    data = _bytes(cnn_om)
    _refused(data[:-100], tmp_path, 100015, "truncated")
    _refused(data[:20], tmp_path, 100015, "shorter than the 64-byte preamble")
    _refused(data + b"x", tmp_path, 100015, "trailing bytes")


def test_corrupt_weights_and_header(cnn_om, tmp_path):
    data = _bytes(cnn_om)
    data[-10] ^= 0xFF
    _refused(data, tmp_path, 100012, "checksum .* corrupt")
    data = _bytes(cnn_om)
    data[70] ^= 0x01
    _refused(data, tmp_path, 100012, "checksum")


def test_wrong_version_and_magic(cnn_om, tmp_path):
    data = _bytes(cnn_om)
    data[8:12] = struct.pack("<I", 99)
    _refused(data, tmp_path, 100013, "format version must be 1, got version=99")
    data = _bytes(cnn_om)
    data[:8] = b"\x80\x04\x95pickle"
    _refused(data, tmp_path, 100013, "magic must be")


def test_missing_file(tmp_path):
    with pytest.raises(rt.AclError, match="cannot read model file") as e:
        rt.Model.load(str(tmp_path / "nope.om"))
    assert e.value.code == 100014


def test_schema_errors_are_refused(cnn_om, tmp_path):
    header, blob = fmt.parse(bytes(_bytes(cnn_om)))
    bad = json.loads(json.dumps(header))
    act = next(n for n, t in bad["tensors"].items() if t["kind"] == "activation")
    bad["tensors"][act]["offset"] = bad["workspace_bytes"] + 64
    weights = [(w["name"], np.frombuffer(blob, w["dtype"], int(np.prod(w["shape"])),
                                         w["offset"]).reshape(w["shape"]))
               for w in header["weights"]]
    _refused(fmt.pack(bad, weights), tmp_path, 100012, f"activation '{act}' must lie inside")
    bad = json.loads(json.dumps(header))
    bad["nodes"][0]["op"] = "Exec"
    e = _refused(fmt.pack(bad, weights), tmp_path, 100024, "'Exec'.*no implementation")
    assert "Exec" in e.message


def test_parse_input_shape_takes_static_dims_only():
    from rt.atc import AtcError, parse_input_shape
    assert parse_input_shape("x:1,3,224,224;y:1,10") == {"x": [1, 3, 224, 224], "y": [1, 10]}
    assert parse_input_shape(None) == {}
    with pytest.raises(AtcError, match=r"--input_shape dims must be >= 1 .* got x:\[1, -1\]"):
        parse_input_shape("x:1,-1")
    with pytest.raises(AtcError, match=r"--input_shape must look like .* got 'x1,2'"):
        parse_input_shape("x1,2")


def _padded_model(auto_pad, conv_pads=None, pool_pads=None):
    """Conv (3x3 stride 2) -> MaxPool (2x2 stride 2) -> MaxPool (3x3 stride 2, ceil_mode) on a
    1x3x21x18 input; `auto_pad`, or explicit pads when given."""
    from onnx import TensorProto, helper, numpy_helper
    w = numpy_helper.from_array(np.random.default_rng(5).standard_normal((4, 3, 3, 3))
                                .astype(np.float32), "w")
    pad = (lambda p: {"pads": p}) if conv_pads else (lambda p: {"auto_pad": auto_pad})
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], strides=[2, 2], **pad(conv_pads)),
             helper.make_node("MaxPool", ["c"], ["p"], kernel_shape=[2, 2], strides=[2, 2],
                              **pad(pool_pads)),
             helper.make_node("MaxPool", ["p"], ["y"], ceil_mode=1, kernel_shape=[3, 3],
                              strides=[2, 2])]
    graph = helper.make_graph(nodes, "pads", [helper.make_tensor_value_info(
        "x", TensorProto.FLOAT, [1, 3, 21, 18])], [helper.make_tensor_value_info(
            "y", TensorProto.FLOAT, None)], [w])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])


# ONNX's rule by hand: Conv H 21 -> 11 needs 2 (1 + 1), W 18 -> 9 needs 1; MaxPool 11x9 -> 6x5
# needs 1 in each; the odd element at the end (UPPER) or the start (LOWER); pads are
# [h_begin, w_begin, h_end, w_end]
PADS = {"SAME_UPPER": ([1, 0, 1, 1], [0, 0, 1, 1]), "SAME_LOWER": ([1, 1, 1, 0], [1, 1, 0, 0])}


@pytest.mark.parametrize("auto_pad", ["SAME_UPPER", "SAME_LOWER"])
def test_auto_pad_and_ceil_mode_become_explicit_pads(tmp_path, auto_pad):
    """Conv and MaxPool with auto_pad SAME_* (odd totals, so UPPER and LOWER differ) and MaxPool
    with ceil_mode run as ONNX's reference computes the same model with the pads written out
    (onnx.reference itself sizes MaxPool's SAME_LOWER output one short of ONNX shape inference)."""
    from onnx.reference import ReferenceEvaluator
    m = _padded_model(auto_pad)
    onnx.save(m, tmp_path / "pads.onnx")
    s = convert(str(tmp_path / "pads.onnx"), str(tmp_path / "pads"), "Ascend910B2")
    header, _ = fmt.parse(open(s["path"], "rb").read())
    conv, pool = (next(n for n in header["nodes"] if n["op"] == op)
                  for op in ("Conv", "MaxPool"))
    assert conv["attrs"]["auto_pad"] == "NOTSET" == pool["attrs"]["auto_pad"]
    assert (conv["attrs"]["pads"], pool["attrs"]["pads"]) == PADS[auto_pad]
    x = np.random.default_rng(6).standard_normal((1, 3, 21, 18)).astype(np.float32)
    (y,) = rt.Model.load(s["path"]).execute([x])
    ref = ReferenceEvaluator(_padded_model(None, *PADS[auto_pad])).run(None, {"x": x})[0]
    assert y.shape == ref.shape == (1, 4, 3, 2)         # ceil_mode: 6 -> 3 rows (2 without)
    np.testing.assert_allclose(y, ref, rtol=1e-4, atol=1e-5)
    if auto_pad == "SAME_UPPER":
        np.testing.assert_allclose(y, ReferenceEvaluator(m).run(None, {"x": x})[0],
                                   rtol=1e-4, atol=1e-5)
