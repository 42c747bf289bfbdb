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
