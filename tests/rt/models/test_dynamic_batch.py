"""--dynamic_batch_size: one graph per batch size, chosen by rt.Model.set_dynamic_batch_size /
acl.mdl.set_dynamic_batch_size; results match onnx.reference at every size."""
import numpy as np
import pytest
from onnx.reference import ReferenceEvaluator

import rt
import rt.acl as acl
from rt.atc import AtcError, convert, convert_to_bytes
from rt.graph.format import pack, parse

import onnx_models


def _dynamic_cnn():
    m = onnx_models.cnn(n=1)
    m.graph.input[0].type.tensor_type.shape.dim[0].dim_param = "N"
    m.graph.output[0].type.tensor_type.shape.dim[0].dim_param = "N"
    return m


def test_model_runs_every_batch_size():
    m = _dynamic_cnn()
    data, summary = convert_to_bytes(m, "Ascend910B2", dynamic_batch_size="1,2,4")
    assert summary["dynamic_batch"] == [1, 2, 4]
    model = rt.Model.load(data)
    assert model.dynamic_batch_sizes == [1, 2, 4] and model.inputs[0].shape == (4, 3, 12, 12)
    ref = ReferenceEvaluator(m)
    for b in (2, 1, 4):
        model.set_dynamic_batch_size(b)
        assert model.inputs[0].shape == (b, 3, 12, 12) and model.outputs[0].shape == (b, 10)
        x = np.random.default_rng(b).standard_normal((b, 3, 12, 12)).astype(np.float32)
        (y,) = model.execute([x])
        np.testing.assert_allclose(y, ref.run(None, {"x": x})[0], rtol=1e-4, atol=1e-5)
    with pytest.raises(rt.AclError, match=r"batch must be one of \[1, 2, 4\], got batch=3"):
        model.set_dynamic_batch_size(3)
    static = rt.Model.load(convert_to_bytes(onnx_models.cnn(), "Ascend910B2")[0])
    with pytest.raises(rt.AclError, match="must be converted with --dynamic_batch_size"):
        static.set_dynamic_batch_size(1)
    with pytest.raises(AtcError, match="dynamic_batch_size must look like"):
        convert_to_bytes(m, "Ascend910B2", dynamic_batch_size="1,x")


def test_a_corrupt_batch_graph_is_refused():
    data, _ = convert_to_bytes(_dynamic_cnn(), "Ascend910B2", dynamic_batch_size="1,2")
    header, blob = parse(data)
    weights = [(w["name"], np.frombuffer(blob, w["dtype"], int(np.prod(w["shape"])),
                                         w["offset"]).reshape(w["shape"]))
               for w in header["weights"]]
    variant = header["dynamic_batch"]["variants"]["1"]
    act = next(k for k, t in variant["tensors"].items() if t["kind"] == "activation")
    variant["tensors"][act]["offset"] = header["workspace_bytes"]      # outside the workspace
    del header["weights"], header["weight_bytes"]
    bad = pack(header, weights)
    with pytest.raises(rt.AclError, match=f"activation '{act}' must lie inside") as e:
        rt.Model.load(bad)
    assert e.value.code == 100012


def test_acl_mdl_dynamic_batch(tmp_path):
    m = _dynamic_cnn()
    path = tmp_path / "dyn.onnx"
    import onnx
    onnx.save(m, path)
    om = convert(str(path), str(tmp_path / "dyn"), "Ascend910B2", dynamic_batch_size="1,2,4")
    rt.ensure_device()
    mid, ret = acl.mdl.load_from_file(om["path"])
    assert ret == 0
    desc = acl.mdl.create_desc()
    assert acl.mdl.get_desc(desc, mid) == 0
    assert acl.mdl.get_num_inputs(desc) == 2            # x + ACL_DYNAMIC_TENSOR_NAME
    index, ret = acl.mdl.get_input_index_by_name(desc, acl.mdl.ACL_DYNAMIC_TENSOR_NAME)
    assert (index, ret) == (1, 0)
    in_size = acl.mdl.get_input_size_by_index(desc, 0)
    out_size = acl.mdl.get_output_size_by_index(desc, 0)
    assert in_size == 4 * 3 * 144 * 4 and out_size == 4 * 10 * 4     # the largest batch
    bufs = []
    ds_in, ds_out = acl.mdl.create_dataset(), acl.mdl.create_dataset()
    for ds, size in ((ds_in, in_size), (ds_in, acl.mdl.get_input_size_by_index(desc, 1)),
                     (ds_out, out_size)):
        p, ret = acl.rt.malloc(size, 0)
        bufs.append((p, acl.create_data_buffer(p, size)))
        acl.mdl.add_dataset_buffer(ds, bufs[-1][1])
    assert acl.mdl.set_dynamic_batch_size(mid, ds_in, index, 2) == 0
    assert acl.mdl.set_dynamic_batch_size(mid, ds_in, 0, 2) == acl.ACL_ERROR_INVALID_PARAM
    assert "index must be the index of 'ascend_mbatch_shape_data' (1), got index=0" in \
        acl.get_recent_err_msg()
    assert acl.mdl.set_dynamic_batch_size(mid, ds_in, index, 3) == acl.ACL_ERROR_INVALID_PARAM
    assert "acl.mdl.set_dynamic_batch_size: batch must be one of [1, 2, 4]" in \
        acl.get_recent_err_msg()
    x = np.random.default_rng(0).standard_normal((2, 3, 12, 12)).astype(np.float32)
    assert acl.rt.memcpy(bufs[0][0], in_size, acl.util.numpy_to_ptr(x), x.nbytes,
                         acl.ACL_MEMCPY_HOST_TO_DEVICE) == 0
    assert acl.mdl.get_cur_output_dims(desc, 0) == ({"name": "prob", "dimCount": 2,
                                                     "dims": [2, 10]}, 0)
    assert acl.mdl.get_output_dims(desc, 0)[0]["dims"] == [4, 10]
    assert acl.mdl.execute(mid, ds_in, ds_out) == 0
    y = np.zeros((2, 10), np.float32)
    assert acl.rt.memcpy(acl.util.numpy_to_ptr(y), y.nbytes, bufs[2][0], y.nbytes,
                         acl.ACL_MEMCPY_DEVICE_TO_HOST) == 0
    np.testing.assert_allclose(y, ReferenceEvaluator(m).run(None, {"x": x})[0], rtol=1e-4,
                               atol=1e-5)
    for p, b in bufs:
        assert acl.destroy_data_buffer(b) == 0 and acl.rt.free(p) == 0
    assert acl.mdl.destroy_dataset(ds_in) == 0 and acl.mdl.destroy_dataset(ds_out) == 0
    assert acl.mdl.destroy_desc(desc) == 0 and acl.mdl.unload(mid) == 0
