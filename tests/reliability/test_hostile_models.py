"""Hostile inputs end in CANN codes, not tracebacks: .om headers that lie (too deep to read,
wrong types), acl.mdl.load_from_mem given anything, a model built for another SoC (refused at
load as CANN refuses it), and `kernel[True]` as a block_dim."""
import copy
import hashlib
import json

import numpy as np
import pytest
from onnx import TensorProto, helper

import ascendc as asc
import rt
import rt.acl as acl
from rt.atc import convert_to_bytes
from rt.graph.format import FORMAT_VERSION, MAGIC, PREAMBLE, align, parse


def _neg_model_bytes(soc="Ascend910B2"):
    g = helper.make_graph([helper.make_node("Neg", ["x"], ["y"])], "neg",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [8])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    return convert_to_bytes(m, soc, "x:8")[0]


def _raw(hbytes: bytes, blob: bytes = b"") -> bytes:
    """A file whose preamble, sizes and checksum are right for any header bytes."""
    digest = hashlib.sha256(hbytes + blob).digest()
    return PREAMBLE.pack(MAGIC, FORMAT_VERSION, 0, len(hbytes), len(blob), digest) + hbytes + \
        b"\0" * (align(len(hbytes)) - len(hbytes)) + blob


def _lie(edit):
    h, blob = parse(_neg_model_bytes())
    h = copy.deepcopy(h)
    edit(h)
    return _raw(json.dumps(h).encode(), bytes(blob))


LIES = {
    "nested-too-deep": (lambda: _raw(b'{"x":' + b"[" * 200_000 + b"]" * 200_000 + b"}"),
                        r"header must be UTF-8 JSON of bounded depth"),
    "input-not-a-name": (lambda: _lie(lambda h: h.__setitem__("inputs", [1])),
                         r"inputs entry 1 must be a tensor"),
    "attrs-not-a-dict": (lambda: _lie(lambda h: h["nodes"][0].__setitem__("attrs", [1])),
                         r"node must have name, op, attrs, inputs, outputs"),
    "tensor-null": (lambda: _lie(lambda h: h["tensors"].__setitem__("x", None)),
                    r"tensor 'x' must have dtype in"),
}


@pytest.mark.parametrize("case", list(LIES))
def test_lying_headers_are_refused_with_a_code(case, dev0):
    make, message = LIES[case]
    data = make()
    with pytest.raises(rt.AclError, match=message) as e:
        rt.Model.load(data)
    assert e.value.code == 100012                      # ACL_ERROR_DESERIALIZE_MODEL
    model_id, ret = acl.mdl.load_from_mem(data, len(data))
    assert (model_id, ret) == (0, 100012)


HUGE = {
    "input-2^124-elements": (lambda h: h["tensors"]["x"].__setitem__("shape", [2 ** 31] * 4),
                             "tensor 'x'", "[2147483648, 2147483648, 2147483648, 2147483648]"),
    "output-int64-overflow": (lambda h: h["tensors"]["y"].__setitem__("shape", [2 ** 62, 4]),
                              "tensor 'y'", "[4611686018427387904, 4]"),
    "dim-past-int64": (lambda h: h["tensors"]["x"].__setitem__("shape", [2 ** 124]),
                       "tensor 'x'", f"[{2 ** 124}]"),
}


def test_a_header_claiming_a_huge_workspace_is_refused(dev0):
    data = _lie(lambda h: h.__setitem__("workspace_bytes", 2 ** 100))
    with pytest.raises(rt.AclError, match=r"header: workspace_bytes must be in \[0, 68719476736\] "
                                          rf"\(the largest device memory\), got "
                                          rf"workspace_bytes={2 ** 100}") as e:
        rt.Model.load(data)
    assert e.value.code == 100012
    assert acl.mdl.load_from_mem(data, len(data)) == (0, 100012)


@pytest.mark.parametrize("case", list(HUGE))
def test_a_header_claiming_a_huge_tensor_is_refused_before_sizing(case, dev0, tmp_path):
    """Shapes whose element count overflows int64 (or passes any device's memory) used to load:
    the model then claimed a 2^124-element input. Refused at load, through rt and acl."""
    edit, what, shape = HUGE[case]
    data = _lie(edit)
    with pytest.raises(rt.AclError) as e:
        rt.Model.load(data)
    assert e.value.code == 100012                      # ACL_ERROR_DESERIALIZE_MODEL
    assert f"load model <memory>: header: {what} must fit in 68719476736 bytes (the largest " \
           f"device memory), got shape={shape}" in str(e.value)
    assert acl.mdl.load_from_mem(data, len(data)) == (0, 100012)
    path = tmp_path / "huge.om"
    path.write_bytes(data)
    assert acl.mdl.load_from_file(str(path)) == (0, 100012)


def test_load_from_mem_never_raises(dev0):
    assert acl.mdl.load_from_mem(3.5, 4) == (0, 100000)          # ACL_ERROR_INVALID_PARAM
    assert acl.mdl.load_from_mem(None, 0) == (0, 100000)
    assert acl.mdl.load_from_mem(b"", 0)[1] == 100015            # ACL_ERROR_MODEL_SIZE_INVALID


def test_a_model_for_another_soc_is_refused(dev0):
    data = _neg_model_bytes("Ascend310P3")
    with pytest.raises(rt.AclError, match=r"load model <memory>: soc_version must be the "
                       r"device's 'Ascend910B2' \(convert again with atc "
                       r"--soc_version=Ascend910B2\), got soc_version='Ascend310P3'") as e:
        rt.Model.load(data)
    assert e.value.code == 100013                      # ACL_ERROR_PARSE_MODEL
    assert acl.mdl.load_from_mem(data, len(data)) == (0, 100013)
    assert acl.mdl.load_from_mem(_neg_model_bytes(), 0)[1] == 0     # its own SoC loads


@asc.jit
def _noop(x: asc.GlobalAddress):
    pass


@pytest.mark.parametrize("bd", [True, False])
def test_a_bool_is_not_a_block_dim(bd, dev0):
    with pytest.raises(rt.AclError, match=rf"_noop\[\]: block_dim must be in \[1, 65535\], got "
                                          rf"block_dim={bd}"):
        _noop[bd](np.zeros(8, np.float32))


def test_atc_refuses_an_empty_file_and_a_cyclic_graph(tmp_path, capsys):
    from rt.atc import AtcError
    from rt.atc.__main__ import main as atc_main
    empty = tmp_path / "empty.onnx"
    empty.write_bytes(b"")
    assert atc_main(["--model", str(empty), "--output", str(tmp_path / "e"),
                     "--soc_version", "Ascend910B2"]) != 0
    assert "must have a graph with at least one output" in capsys.readouterr().err
    assert not (tmp_path / "e.om").exists()
    cyclic = helper.make_model(helper.make_graph(
        [helper.make_node("Add", ["x", "b"], ["a"]), helper.make_node("Add", ["a", "x"], ["b"])],
        "cyc", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
        [helper.make_tensor_value_info("b", TensorProto.FLOAT, [4])]),
        opset_imports=[helper.make_opsetid("", 17)])
    with pytest.raises(AtcError, match=r"atc: the graph must be acyclic with nodes in topological "
                                       r"order, got node 'Add_0' reading \['b'\]"):
        convert_to_bytes(cyclic, "Ascend910B2", "x:4")


@pytest.mark.parametrize("content", [b"[" * 200_000 + b"]" * 200_000, b'[{"op": "\xff\xfe"}]'],
                         ids=["deep", "not-utf8"])
def test_singleop_json_that_lies_is_refused(tmp_path, capsys, content):
    from rt.atc.__main__ import main as atc_main
    path = tmp_path / "ops.json"
    path.write_bytes(content)
    assert atc_main(["--singleop", str(path), "--output", str(tmp_path / "out"),
                     "--soc_version", "Ascend910B2"]) != 0
    assert "must be JSON" in capsys.readouterr().err


@pytest.mark.parametrize("planted", ["deep", "dev-zero"])
def test_set_model_dir_answers_a_code_for_hostile_files(tmp_path, planted, dev0):
    import os
    d = tmp_path / "ops"
    d.mkdir()
    if planted == "deep":
        (d / "0_Add_x.json").write_bytes(b"[" * 200_000 + b"]" * 200_000)
    else:
        os.symlink("/dev/zero", d / "0_Add_x.json")
    ret = acl.op.set_model_dir(str(d))
    assert ret != 0
    assert "must be a readable JSON file" in acl.get_recent_err_msg()


def _constant_of_shape_model(nbytes_f32: int, reduce: bool = True):
    """x + ReduceSum(ConstantOfShape(shape)): folding would materialise the constant."""
    from onnx import numpy_helper
    shape = numpy_helper.from_array(np.array([nbytes_f32 // 4], np.int64), "shp")
    nodes = [helper.make_node("ConstantOfShape", ["shp"], ["c"],
                              value=helper.make_tensor("v", TensorProto.FLOAT, [1], [1.0])),
             helper.make_node("ReduceSum", ["c"], ["s"], keepdims=0),
             helper.make_node("Add", ["x", "s"], ["y"])]
    g = helper.make_graph(nodes, "cos",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [8])],
                          initializer=[shape])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


COS_149G = (r"atc: tensor 'c' must fit in 68719476736 bytes \(the largest device memory\), "
            r"got shape=\[39996882944\] \(159987531776 bytes\)")


def test_atc_refuses_a_149_gib_constant_of_shape_before_materialising(tmp_path, capsys):
    """It used to end in numpy's MemoryError (or, with overcommit, fill 149 GiB)."""
    import onnx
    from rt.atc import AtcError
    from rt.atc.__main__ import main as atc_main
    model = _constant_of_shape_model(149 << 30)
    with pytest.raises(AtcError, match=COS_149G):
        convert_to_bytes(model, "Ascend910B2", "x:8")
    path = tmp_path / "cos.onnx"
    onnx.save(model, str(path))
    assert atc_main(["--model", str(path), "--output", str(tmp_path / "cos"),
                     "--soc_version", "Ascend910B2"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("ATC run failed: atc: tensor 'c' must fit in") and "Traceback" not in err
    assert not (tmp_path / "cos.om").exists()
    small = convert_to_bytes(_constant_of_shape_model(4096), "Ascend910B2", "x:8")[0]
    assert rt.Model.load(small).inputs[0].shape == (8,)         # a small one still folds


def test_constant_of_shape_checks_its_size_before_filling():
    """The AI CPU implementation (what folding runs when shape inference gives no shape)."""
    from rt.graph import aicpu
    with pytest.raises(ValueError, match=r"ConstantOfShape: shape must be non-negative and fit "
                                         r"in 68719476736 bytes \(the largest device memory\), "
                                         r"got shape=\[39996882944\] \(159987531776 bytes\)"):
        aicpu.run("ConstantOfShape", {}, [np.array([(149 << 30) // 4])])
    assert aicpu.run("ConstantOfShape", {}, [np.array([2, 3])])[0].shape == (2, 3)
