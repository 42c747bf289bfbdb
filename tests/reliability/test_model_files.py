"""Model files cannot read the host: an embedded ONNX graph (a range model's, re-converted at
execute) or a ModelProto handed to ATC never resolves external data against the working
directory; such tensors are refused with the model-invalid code."""
import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import rt
import rt.acl as acl
from rt.atc import AtcError, convert_to_bytes
from rt.graph.format import pack, parse

F32 = np.float32
SECRET = b"ssh-rsa AAAA secret key material!"      # 32 bytes: 8 float32


def _add_model(w_external: bool):
    w = numpy_helper.from_array(np.zeros(8, F32), "w")
    if w_external:
        w.ClearField("raw_data")
        w.data_location = TensorProto.EXTERNAL
        for k, v in (("location", "notes.txt"), ("offset", "0"), ("length", "32")):
            e = w.external_data.add()
            e.key, e.value = k, v
    g = helper.make_graph([helper.make_node("Add", ["x", "w"], ["y"])], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [w])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def _crafted_range_model() -> bytes:
    """A valid range model (checksum and header hold) whose embedded graph stores `w` as
    external data named "notes.txt"."""
    header, blob = parse(convert_to_bytes(_add_model(False), "Ascend910B2", "x:1~4,8")[0])
    weights = [(w["name"], np.frombuffer(blob, w["dtype"], int(np.prod(w["shape"])),
                                         w["offset"]).reshape(w["shape"]))
               for w in header["weights"]]
    evil = np.frombuffer(_add_model(True).SerializeToString(), np.uint8)
    weights = [(n, evil if n == "::onnx_model" else a) for n, a in weights]
    del header["weights"], header["weight_bytes"]
    return pack(header, weights)


@pytest.fixture
def notes(tmp_path, monkeypatch):
    (tmp_path / "notes.txt").write_bytes(SECRET)
    monkeypatch.chdir(tmp_path)


def test_embedded_graph_never_loads_external_data_from_cwd(notes):
    model = rt.Model.load(_crafted_range_model())
    with pytest.raises(rt.AclError, match=r"model execute: the model's embedded ONNX graph must "
                       r"hold every tensor's data, got external data for \['w'\]") as e:
        model.execute([np.zeros((2, 8), F32)])
    assert e.value.code == 100012                   # ACL_ERROR_DESERIALIZE_MODEL


def test_embedded_external_data_through_acl_is_a_code_not_a_read(notes, dev0):
    data = _crafted_range_model()
    model_id, ret = acl.mdl.load_from_mem(data, len(data))
    assert ret == 0
    desc = acl.mdl.create_desc()
    assert acl.mdl.get_desc(desc, model_id) == 0
    x = np.zeros((2, 8), F32)
    dev, ret = acl.rt.malloc(x.nbytes, 0)
    out_dev, ret = acl.rt.malloc(x.nbytes, 0)
    inputs, outputs = acl.mdl.create_dataset(), acl.mdl.create_dataset()
    acl.mdl.add_dataset_buffer(inputs, acl.create_data_buffer(dev, x.nbytes))
    acl.mdl.add_dataset_buffer(outputs, acl.create_data_buffer(out_dev, x.nbytes))
    inp_desc = acl.create_tensor_desc(acl.ACL_FLOAT, [2, 8], acl.ACL_FORMAT_ND)
    acl.mdl.set_dataset_tensor_desc(inputs, inp_desc, 0)
    ret = acl.mdl.execute(model_id, inputs, outputs)
    assert ret == 100012


def test_atc_refuses_a_modelproto_with_external_data(notes):
    with pytest.raises(AtcError, match=r"atc: tensors must hold their data in the model, got "
                       r"external data for \['w'\]"):
        convert_to_bytes(_add_model(True), "Ascend910B2", "x:2,8")
