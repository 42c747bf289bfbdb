"""rt.graph.format checks every other graph of a dynamic batch / gear file like the main graph:
a variant that does not fit the shared workspace, or names an unknown tensor, is refused at
load with its message and ACL_ERROR_DESERIALIZE_MODEL."""
import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import rt
from rt.atc import convert_to_bytes
from rt.graph.format import pack, parse

F32 = np.float32


def _relu_matmul():
    g = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["h"]),
                           helper.make_node("Relu", ["h"], ["y"])], "v",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                          [numpy_helper.from_array(np.ones((4, 3), F32), "w")])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def _files():
    batch, _ = convert_to_bytes(_relu_matmul(), "Ascend910B2", "x:4,4", dynamic_batch_size="1,4")
    dims, _ = convert_to_bytes(_relu_matmul(), "Ascend910B2", "x:-1,4", dynamic_dims="2;4",
                               input_format="ND")
    return {"dynamic_batch": batch, "dynamic_gears": dims}


@pytest.fixture(scope="module")
def files():
    return _files()


def _repack(data, edit):
    header, blob = parse(data)
    weights = [(w["name"], np.frombuffer(blob, w["dtype"], int(np.prod(w["shape"])),
                                         w["offset"]).reshape(w["shape"]))
               for w in header["weights"]]
    edit(header)
    del header["weights"], header["weight_bytes"]
    return pack(header, weights)


@pytest.mark.parametrize("kind", ["dynamic_batch", "dynamic_gears"])
def test_variant_must_fit_workspace(files, kind):
    assert rt.Model.load(files[kind]).dynamic_mode in ("batch", "dims")   # the file is good

    def edit(h):
        (key, v), = h[kind]["variants"].items()
        v["workspace_bytes"] = h["workspace_bytes"] + 1
    with pytest.raises(rt.AclError, match=f"{kind} graph [0-9]+ must fit the workspace") as e:
        rt.Model.load(_repack(files[kind], edit))
    assert e.value.code == 100012


@pytest.mark.parametrize("kind", ["dynamic_batch", "dynamic_gears"])
def test_variant_nodes_are_validated(files, kind):
    def edit(h):
        (key, v), = h[kind]["variants"].items()
        v["nodes"][0]["inputs"][0] = "nowhere"
    with pytest.raises(rt.AclError, match="refers to unknown tensor 'nowhere'") as e:
        rt.Model.load(_repack(files[kind], edit))
    assert e.value.code == 100012
