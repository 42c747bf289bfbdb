"""Dynamic shapes beyond the batch: ATC gears (--dynamic_image_size, --dynamic_dims) and ranges
(--input_shape "x:1~2,3,8~16,-1"), through rt.Model and acl.mdl; results match onnx.reference
at every gear and shape, and every bad spec or shape is refused with its message and code."""
import base64
import sys
import zlib

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

import rt
import rt.acl as acl
from rt.atc import AtcError, convert, convert_to_bytes
from rt.atc.__main__ import main as atc_main
from rt.graph.format import parse

F32 = np.float32


def _model(nodes, inputs, outputs, inits):
    g = helper.make_graph(nodes, "dyn", inputs, outputs,
                          [numpy_helper.from_array(v, k) for k, v in inits.items()])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def conv_pool():
    """Conv 3x3 (pad 1) + Relu + MaxPool 2 + Add of a per-channel constant: NCHW, N/H/W free."""
    rng = np.random.default_rng(1)
    return _model([helper.make_node("Conv", ["x", "w"], ["c"], kernel_shape=[3, 3],
                                    pads=[1, 1, 1, 1]),
                   helper.make_node("Relu", ["c"], ["r"]),
                   helper.make_node("MaxPool", ["r"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
                   helper.make_node("Add", ["p", "b"], ["y"])],
                  [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, "H", "W"])],
                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                  {"w": (rng.standard_normal((4, 3, 3, 3)) * 0.3).astype(F32),
                   "b": rng.standard_normal((1, 4, 1, 1)).astype(F32)})


def seq_two_inputs():
    """data [1, T, 16] @ w + bias -> y [1, T, 8]; mask [S, S] * 2 -> z (two inputs, T and S)."""
    rng = np.random.default_rng(2)
    return _model([helper.make_node("MatMul", ["data", "w"], ["h"]),
                   helper.make_node("Add", ["h", "bias"], ["y"]),
                   helper.make_node("Mul", ["mask", "two"], ["z"])],
                  [helper.make_tensor_value_info("data", TensorProto.FLOAT, [1, "T", 16]),
                   helper.make_tensor_value_info("mask", TensorProto.FLOAT, ["S", "S"])],
                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, None),
                   helper.make_tensor_value_info("z", TensorProto.FLOAT, None)],
                  {"w": (rng.standard_normal((16, 8)) * 0.3).astype(F32),
                   "bias": rng.standard_normal(8).astype(F32), "two": np.array(2, F32)})


def _check(model, ref, feeds, seed=0):
    rng = np.random.default_rng(seed)
    xs = {k: rng.standard_normal(s).astype(F32) for k, s in feeds.items()}
    got = model.execute(xs)
    for g, want in zip(got, ref.run(None, xs)):
        np.testing.assert_allclose(g, want, rtol=1e-4, atol=1e-4)
    return got


def test_dynamic_image_size_runs_every_gear(tmp_path):
    m = conv_pool()
    assert atc_main(["--model", _save(m, tmp_path), "--output", str(tmp_path / "hw"),
                     "--soc_version", "Ascend910B2", "--input_shape", "x:1,3,-1,-1",
                     "--dynamic_image_size", "8,8;12,16", "--input_format", "NCHW"]) == 0
    model = rt.Model.load(tmp_path / "hw.om")
    assert model.dynamic_mode == "image_size" and model.dynamic_gears == [(8, 8), (12, 16)]
    assert model.inputs[0].shape == (1, 3, 12, 16)            # the largest gear is the main one
    ref = ReferenceEvaluator(m)
    for h, w in ((8, 8), (12, 16), (8, 8)):
        model.set_dynamic_hw_size(h, w)
        assert model.inputs[0].shape == (1, 3, h, w) and model.outputs[0].shape == \
            (1, 4, h // 2, w // 2)
        _check(model, ref, {"x": (1, 3, h, w)}, h)
    with pytest.raises(rt.AclError, match=r"set_dynamic_hw_size: \(height, width\) must be one "
                       r"of the gears \[\[8, 8\], \[12, 16\]\], got height=9, width=9") as e:
        model.set_dynamic_hw_size(9, 9)
    assert e.value.code == acl.ACL_ERROR_INVALID_PARAM
    with pytest.raises(rt.AclError, match="set_input_dynamic_dims: the model must be converted "
                       "with --dynamic_dims, got --dynamic_image_size"):
        model.set_input_dynamic_dims([8, 8])
    model.set_dynamic_hw_size(8, 8)
    with pytest.raises(rt.AclError, match="must have shape \\[1, 3, 8, 8\\], got \\[1, 3, 12"):
        model.execute([np.zeros((1, 3, 12, 16), F32)])
    # device buffers sized for the largest gear serve the smaller one (as acl buffers do)
    x = np.random.default_rng(7).standard_normal((1, 3, 8, 8)).astype(F32)
    big_in = rt.to_device(np.resize(x.ravel(), 3 * 12 * 16).reshape(1, 3, 12, 16))
    big_out = rt.to_device(np.zeros((1, 4, 6, 8), F32))
    (y,) = model.execute([big_in], outputs=[big_out])
    rt.current_stream().synchronize()
    np.testing.assert_allclose(y.copy_to_host(), ref.run(None, {"x": x})[0], rtol=1e-4,
                               atol=1e-4)


def _save(m, tmp_path) -> str:
    import onnx
    path = str(tmp_path / "m.onnx")
    onnx.save(m, path)
    return path


def test_dynamic_dims_runs_every_gear():
    m = seq_two_inputs()
    data, summary = convert_to_bytes(m, "Ascend910B2", "data:1,-1,16;mask:-1,-1",
                                     dynamic_dims="4,2,2;8,3,3;6,5,5", input_format="ND")
    assert summary["dynamic_gears"] == [[4, 2, 2], [8, 3, 3], [6, 5, 5]]
    model = rt.Model.load(data)
    assert model.dynamic_mode == "dims" and model.inputs[0].shape == (1, 8, 16)  # most elements
    assert [d.shape for d in model.declared_inputs] == [(1, 8, 16), (5, 5)]  # largest per input
    ref = ReferenceEvaluator(m)
    model.set_input_dynamic_dims([8, 3, 3])                  # the -1 values of one gear
    y, z = _check(model, ref, {"data": (1, 8, 16), "mask": (3, 3)})
    assert y.shape == (1, 8, 8) and z.shape == (3, 3)
    model.set_input_dynamic_dims([1, 4, 16, 2, 2])          # every input's dims, concatenated
    _check(model, ref, {"data": (1, 4, 16), "mask": (2, 2)}, 1)
    assert model.dynamic_dims_of(2) == [1, 6, 16, 5, 5]
    with pytest.raises(rt.AclError, match=r"set_input_dynamic_dims: dims must be one of the gears "
                       r"\[\[4, 2, 2\], \[8, 3, 3\], \[6, 5, 5\]\] .* got dims=\[4, 3, 3\]"):
        model.set_input_dynamic_dims([4, 3, 3])
    with pytest.raises(rt.AclError, match="set_dynamic_hw_size: the model must be converted with "
                       "--dynamic_image_size, got --dynamic_dims"):
        model.set_dynamic_hw_size(4, 4)


@pytest.mark.parametrize("kwargs, message", [
    (dict(input_shape="x:1,3,-1,-1", dynamic_image_size="8,8"),
     "--dynamic_image_size must list 2 to 100 distinct gears, got '8,8'"),
    (dict(input_shape="x:1,3,-1,-1", dynamic_image_size="8,8;8,x"),
     "--dynamic_image_size must look like \"224,224;448,448\""),
    (dict(input_shape="x:1,3,-1,-1", dynamic_image_size="8,8;8"),
     "each --dynamic_image_size gear must have 2 values >= 1 .* got \\[8\\]"),
    (dict(input_shape="x:1,-1,-1,3", dynamic_image_size="8,8;4,4"),
     "input 'x' must be 4-D with -1 exactly at H and W \\(dims \\(2, 3\\)\\)"),
    (dict(input_shape="x:1,3,-1,-1", dynamic_image_size="8,8;4,4", input_format="ND"),
     "--input_format must be NCHW or NHWC with --dynamic_image_size, got 'ND'"),
    (dict(input_shape="x:1,3,8,8", dynamic_image_size="8,8;4,4"),
     "--dynamic_image_size needs --input_shape with -1 for the dynamic dims"),
    (dict(input_shape="x:1,3,-1,-1", dynamic_dims="8,8;4,4", input_format="NCHW"),
     "--input_format must be ND with --dynamic_dims, got 'NCHW'"),
    (dict(input_shape="x:1,3,-1,-1", dynamic_dims="8;4"),
     "each --dynamic_dims gear must have 2 values"),
    (dict(input_shape="x:1,3,1~4,-1", dynamic_dims="8,8;4,4"),
     "--dynamic_dims and --input_shape ranges are mutually exclusive"),
    (dict(input_shape="x:1,3,-1,-1", dynamic_dims="8,8;4,4", dynamic_batch_size="1,2"),
     "--dynamic_batch_size and --dynamic_dims are mutually exclusive"),
    (dict(input_shape="x:1~2,3,8,8", dynamic_batch_size="1,2"),
     "--dynamic_batch_size and --input_shape ranges are mutually exclusive"),
    (dict(input_shape="x:1,3,4~2,8"),
     "dims must be >= 1, -1 or a range lo~hi with 1 <= lo <= hi .* got 'x:1,3,4~2,8'"),
    (dict(input_shape="x:1,3,0,8"), "dims must be >= 1, -1 or a range"),
    (dict(input_shape="x:1,3,a~b,8"), "--input_shape must look like"),
    (dict(input_shape="x:1,3,-1,-1", dynamic_dims="8,8;4,4", insert_op_conf="aipp.cfg"),
     "--insert_op_conf cannot be combined with --dynamic_dims"),
])
def test_bad_specs_are_refused(kwargs, message):
    with pytest.raises(AtcError, match=message):
        convert_to_bytes(conv_pool(), "Ascend910B2", **kwargs)


def test_range_model_specialises_per_shape():
    m = conv_pool()
    data, summary = convert_to_bytes(m, "Ascend910B2", "x:1~2,3,8~16,8~16")
    assert summary["dynamic_shape"] == {"x": [[1, 2], [3, 3], [8, 16], [8, 16]]}
    model = rt.Model.load(data)
    assert model.dynamic_mode == "shape" and model.inputs[0].shape == (2, 3, 16, 16)
    # query_size: the plan at the upper bounds, the largest within the ranges
    static, _ = convert_to_bytes(m, "Ascend910B2", "x:2,3,16,16")
    assert model.workspace_bytes == parse(static)[0]["workspace_bytes"] > 0
    ref = ReferenceEvaluator(m)
    for k, shape in enumerate([(1, 3, 8, 8), (2, 3, 16, 16), (1, 3, 10, 14), (1, 3, 8, 8)]):
        (y,) = _check(model, ref, {"x": shape}, k)
        assert model.outputs[0].shape == y.shape == (shape[0], 4, shape[2] // 2, shape[3] // 2)
    # (1,3,8,8) and (1,3,10,14); the main shape runs the model itself
    assert len(model._dynamic.specialised_models) == 2
    with pytest.raises(rt.AclError, match=r"model execute: input 0 \('x'\) dim 2 must be in "
                       r"\[8, 16\] \(the --input_shape range\), got 20 \(shape \[1, 3, 20, 8\]\)"
                       ) as e:
        model.execute([np.zeros((1, 3, 20, 8), F32)])
    assert e.value.code == acl.ACL_ERROR_MODEL_INPUT_NOT_MATCH
    with pytest.raises(rt.AclError, match=r"dim 1 must be in \[3, 3\]"):
        model.execute({"x": np.zeros((1, 4, 8, 8), F32)})
    with pytest.raises(rt.AclError, match="input 0 \\('x'\\) must have 4 dims, got shape "
                       "\\[3, 8, 8\\]"):
        model.execute([np.zeros((3, 8, 8), F32)])
    model.unload()


def test_unbounded_range_and_device_arrays(monkeypatch):
    monkeypatch.setenv("ASCEND_EMU_MODEL_SHAPE_CACHE", "1")
    m = seq_two_inputs()
    data, _ = convert_to_bytes(m, "Ascend910B2", "data:1,-1,16;mask:2~-1,2~-1")
    model = rt.Model.load(data)
    assert model.shape_ranges == {"data": [(1, 1), (1, -1), (16, 16)],
                                  "mask": [(2, -1), (2, -1)]}
    assert model.inputs[0].shape == (1, 1, 16)         # unbounded: the lower bounds
    ref = ReferenceEvaluator(m)
    for k, (t, s) in enumerate([(40, 2), (3, 7), (40, 2)]):
        _check(model, ref, {"data": (1, t, 16), "mask": (s, s)}, k)
        assert len(model._dynamic.specialised_models) == 1             # the LRU bound
    x = np.random.default_rng(5).standard_normal((1, 5, 16)).astype(F32)
    mask = np.ones((3, 3), F32)
    dx, dm = rt.to_device(x), rt.to_device(mask)
    y, z = model.execute([dx, dm])
    rt.current_stream().synchronize()
    want = ref.run(None, {"data": x, "mask": mask})
    np.testing.assert_allclose(y.copy_to_host(), want[0], rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(z.copy_to_host(), want[1])
    with pytest.raises(rt.AclError, match=r"input 1 \('mask'\) dim 0 must be in \[2, inf\] "
                       r"\(the --input_shape range\), got 1"):
        model.execute([x, np.ones((1, 1), F32)])


def _buffers(ds, sizes, bufs):
    for size in sizes:
        p, ret = acl.rt.malloc(size, 0)
        assert ret == 0
        bufs.append((p, acl.create_data_buffer(p, size)))
        acl.mdl.add_dataset_buffer(ds, bufs[-1][1])


def _to_device(ptr, size, x):
    assert acl.rt.memcpy(ptr, size, acl.util.numpy_to_ptr(x), x.nbytes,
                         acl.ACL_MEMCPY_HOST_TO_DEVICE) == 0


def _to_host(ptr, shape):
    y = np.zeros(shape, F32)
    assert acl.rt.memcpy(acl.util.numpy_to_ptr(y), y.nbytes, ptr, y.nbytes,
                         acl.ACL_MEMCPY_DEVICE_TO_HOST) == 0
    return y


def _load(data, tmp_path, name):
    path = tmp_path / f"{name}.om"
    path.write_bytes(data)
    rt.ensure_device()
    mid, ret = acl.mdl.load_from_file(str(path))
    assert ret == 0
    desc = acl.mdl.create_desc()
    assert acl.mdl.get_desc(desc, mid) == 0
    return mid, desc


def _release(mid, desc, datasets, bufs):
    for p, b in bufs:
        assert acl.destroy_data_buffer(b) == 0 and acl.rt.free(p) == 0
    for ds in datasets:
        assert acl.mdl.destroy_dataset(ds) == 0
    assert acl.mdl.destroy_desc(desc) == 0 and acl.mdl.unload(mid) == 0


def test_acl_mdl_gears(tmp_path):
    m = seq_two_inputs()
    data, _ = convert_to_bytes(m, "Ascend910B2", "data:1,-1,16;mask:-1,-1",
                               dynamic_dims="4,2,2;8,3,3")
    mid, desc = _load(data, tmp_path, "dims")
    assert acl.mdl.get_num_inputs(desc) == 3            # data, mask, ACL_DYNAMIC_TENSOR_NAME
    index, ret = acl.mdl.get_input_index_by_name(desc, "ascend_mbatch_shape_data")
    assert (index, ret) == (2, 0)
    assert acl.mdl.get_input_dynamic_gear_count(desc, -1) == (2, 0)
    assert acl.mdl.get_input_dynamic_dims(desc, -1, 2) == (
        [{"name": "", "dimCount": 5, "dims": [1, 4, 16, 2, 2]},
         {"name": "", "dimCount": 5, "dims": [1, 8, 16, 3, 3]}], 0)
    assert acl.mdl.get_input_dynamic_dims(desc, -1, 3) == ([], acl.ACL_ERROR_INVALID_PARAM)
    assert "gear_count must be get_input_dynamic_gear_count's 2, got gear_count=3" in \
        acl.get_recent_err_msg()
    assert acl.mdl.get_dynamic_batch(desc) == ({"batchCount": 0, "batch": []}, 0)
    assert acl.mdl.get_dynamic_hw(desc, -1) == ({"hwCount": 0, "hw": []}, 0)
    ds_in, ds_out, bufs = acl.mdl.create_dataset(), acl.mdl.create_dataset(), []
    _buffers(ds_in, [acl.mdl.get_input_size_by_index(desc, i) for i in range(3)], bufs)
    _buffers(ds_out, [acl.mdl.get_output_size_by_index(desc, i) for i in range(2)], bufs)
    assert acl.mdl.get_input_size_by_index(desc, 0) == 8 * 16 * 4       # the largest gear
    assert acl.mdl.get_input_size_by_index(desc, 1) == 3 * 3 * 4
    dims = {"name": "", "dimCount": 5, "dims": [1, 4, 16, 2, 2]}
    assert acl.mdl.set_input_dynamic_dims(mid, ds_in, 0, dims) == acl.ACL_ERROR_INVALID_PARAM
    assert "index must be the index of 'ascend_mbatch_shape_data' (2), got index=0" in \
        acl.get_recent_err_msg()
    assert acl.mdl.set_dynamic_hw_size(mid, ds_in, index, 4, 4) == acl.ACL_ERROR_INVALID_PARAM
    assert "acl.mdl.set_dynamic_hw_size: model_id must be a model converted with " \
           "--dynamic_image_size, got --dynamic_dims" in acl.get_recent_err_msg()
    assert acl.mdl.set_input_dynamic_dims(mid, ds_in, index, dict(dims, dimCount=4)) == \
        acl.ACL_ERROR_INVALID_PARAM
    assert acl.mdl.set_input_dynamic_dims(mid, ds_in, index, dims) == 0
    assert acl.mdl.get_cur_output_dims(desc, 0) == ({"name": "y", "dimCount": 3,
                                                     "dims": [1, 4, 8]}, 0)
    rng = np.random.default_rng(3)
    x, mask = rng.standard_normal((1, 4, 16)).astype(F32), rng.standard_normal((2, 2)).astype(F32)
    _to_device(bufs[0][0], x.nbytes, x)
    _to_device(bufs[1][0], mask.nbytes, mask)
    assert acl.mdl.execute(mid, ds_in, ds_out) == 0
    want = ReferenceEvaluator(m).run(None, {"data": x, "mask": mask})
    np.testing.assert_allclose(_to_host(bufs[3][0], (1, 4, 8)), want[0], rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(_to_host(bufs[4][0], (2, 2)), want[1])
    _release(mid, desc, (ds_in, ds_out), bufs)


def test_acl_mdl_dynamic_hw(tmp_path):
    m = conv_pool()
    data, _ = convert_to_bytes(m, "Ascend910B2", "x:1,3,-1,-1", dynamic_image_size="8,8;12,16")
    mid, desc = _load(data, tmp_path, "hw")
    assert acl.mdl.get_dynamic_hw(desc, -1) == ({"hwCount": 2, "hw": [[8, 8], [12, 16]]}, 0)
    assert acl.mdl.get_input_dynamic_gear_count(desc, -1) == (0, 0)
    index, _ = acl.mdl.get_input_index_by_name(desc, "ascend_mbatch_shape_data")
    ds_in, ds_out, bufs = acl.mdl.create_dataset(), acl.mdl.create_dataset(), []
    _buffers(ds_in, [acl.mdl.get_input_size_by_index(desc, i) for i in range(2)], bufs)
    _buffers(ds_out, [acl.mdl.get_output_size_by_index(desc, 0)], bufs)
    assert acl.mdl.set_dynamic_hw_size(mid, ds_in, index, 9, 9) == acl.ACL_ERROR_INVALID_PARAM
    assert "acl.mdl.set_dynamic_hw_size: (height, width) must be one of the gears" in \
        acl.get_recent_err_msg()
    assert acl.mdl.set_dynamic_hw_size(mid, ds_in, index, 8, 8) == 0
    x = np.random.default_rng(4).standard_normal((1, 3, 8, 8)).astype(F32)
    _to_device(bufs[0][0], x.nbytes, x)
    assert acl.mdl.execute(mid, ds_in, ds_out) == 0
    np.testing.assert_allclose(_to_host(bufs[2][0], (1, 4, 4, 4)),
                               ReferenceEvaluator(m).run(None, {"x": x})[0], rtol=1e-4,
                               atol=1e-4)
    _release(mid, desc, (ds_in, ds_out), bufs)


def test_acl_mdl_range_model(tmp_path):
    m = conv_pool()
    data, _ = convert_to_bytes(m, "Ascend910B2", "x:1~2,3,8~16,8~16")
    mid, desc = _load(data, tmp_path, "range")
    assert acl.mdl.get_num_inputs(desc) == 1            # no gear input in dynamic shape mode
    assert acl.mdl.get_input_dims(desc, 0) == ({"name": "x", "dimCount": 4,
                                                "dims": [-1, 3, -1, -1]}, 0)
    assert acl.mdl.get_output_dims(desc, 0) == ({"name": "y", "dimCount": 4,
                                                 "dims": [-1, 4, -1, -1]}, 0)
    in_size, out_size = (acl.mdl.get_input_size_by_index(desc, 0),
                         acl.mdl.get_output_size_by_index(desc, 0))
    assert (in_size, out_size) == (2 * 3 * 16 * 16 * 4, 2 * 4 * 8 * 8 * 4)   # upper bounds
    work, weight, ret = acl.mdl.query_size(str(tmp_path / "range.om"))
    assert ret == 0 and work == parse(data)[0]["workspace_bytes"] > 0
    ds_in, ds_out, bufs = acl.mdl.create_dataset(), acl.mdl.create_dataset(), []
    _buffers(ds_in, [in_size], bufs)
    _buffers(ds_out, [out_size], bufs)
    assert acl.mdl.execute(mid, ds_in, ds_out) == acl.ACL_ERROR_INVALID_PARAM
    assert "input 0 ('x') has a dynamic shape; give its actual shape with " \
           "acl.mdl.set_dataset_tensor_desc(dataset, tensor_desc, 0)" in acl.get_recent_err_msg()
    ref = ReferenceEvaluator(m)
    for k, shape in enumerate([(1, 3, 10, 12), (2, 3, 8, 16)]):
        td = acl.create_tensor_desc(acl.ACL_FLOAT, list(shape), acl.ACL_FORMAT_NCHW)
        assert acl.mdl.set_dataset_tensor_desc(ds_in, td, 0) == 0
        assert acl.mdl.get_dataset_tensor_desc(ds_in, 0) == td
        x = np.random.default_rng(k).standard_normal(shape).astype(F32)
        _to_device(bufs[0][0], x.nbytes, x)
        assert acl.mdl.execute(mid, ds_in, ds_out) == 0
        out_shape = (shape[0], 4, shape[2] // 2, shape[3] // 2)
        out_desc = acl.mdl.get_dataset_tensor_desc(ds_out, 0)
        assert [acl.get_tensor_desc_dim(out_desc, i) for i in range(4)] == list(out_shape)
        assert acl.mdl.get_cur_output_dims(desc, 0)[0]["dims"] == list(out_shape)
        np.testing.assert_allclose(_to_host(bufs[1][0], out_shape),
                                   ref.run(None, {"x": x})[0], rtol=1e-4, atol=1e-4)
        acl.destroy_tensor_desc(td)
    td = acl.create_tensor_desc(acl.ACL_FLOAT, [1, 3, 8, 32], acl.ACL_FORMAT_NCHW)
    assert acl.mdl.set_dataset_tensor_desc(ds_in, td, 0) == 0
    assert acl.mdl.execute(mid, ds_in, ds_out) == acl.ACL_ERROR_MODEL_INPUT_NOT_MATCH
    assert "acl.mdl.execute: input 0 ('x') dim 3 must be in [8, 16]" in acl.get_recent_err_msg()
    assert acl.mdl.set_dataset_tensor_desc(ds_in, td, -1) == acl.ACL_ERROR_INVALID_PARAM
    acl.destroy_tensor_desc(td)
    _release(mid, desc, (ds_in, ds_out), bufs)


# Written by python -m rt.atc before the dynamic-shape keys existed (zlib + base64): a MatMul +
# Relu model, static x:2,4 and with --dynamic_batch_size "1,2".
_OLD_STATIC = """
eNqlUk1Lw0AQTf0Dnr2O11RTU/wo2KCgeLAKghdLCWuyMcE2GzabxlAKXoXepb3oX/Du1VuLf0A8i9fi3dmktrVqL+aQz
MzOezvvTXb2KqfHFSWXU7LnaSH7aqP84PnjbDhMVlfN9562f7H4uGwdbXTebl6aD3ev/P62BQ7jDSKgBCS0qG/naSPKswao
4PlBJEIoVeEKair4zKYyawERgmPUan/vUSFO+0iDIluFiEpUNzUss2CcyywSXxgXam31Dz53iuuE1iOz8MUks+88CfLUZisq
BHXiIy0QS3hNIjzm41lBhfNESCXrxVFoxp5wEWxyGoU0O5BqzZjxyzAgluzWcLqAMzuyKMchuFghwsIxQmaZTcpDZMfyTurh
VkHbXcMzQf2QpdJQDr5skQRSj1NnROiy49LzbWn9eEIpzHFCigvRkNwlElBdU3V0Cv2dRxJT78IVMEEVM9TVXFTqOExfVZSg
ZC4ocxpmBpQTpjOYUw5nlezH+ck3WnAswxGouPmrBakYXOp4J5NL2sr/nkG/vz3oH5Z73W4Z4zKWjF53ydB13cC64TiOoSjX
GHeMTxObCuA="""
_OLD_BATCH = """
eNrVVL9v00AUTiUWJmbWJ0a38o8IgQWxisTWAKrUKbJOF/uMT43vrLtzUjeK1IkFxEy6MDGxM/MHpAsDK38EYueenaRpKRkQ
QsKD/d537/v8ftn7T/tHz/udnZ1Oe32+1T7dpc/vHcSvxe3hW/Xl22D64877Fx+OTp+9+3T46uPXR3vfwymktaAFT8iQmiQH
C2h+yjSEA8/xYwfGVHEqjMYTD29clBW6AzgBey5k2kRPgRqjMGzmXIlxYNLE0YJBCH1q+tWIuBaW5dpHrzIrTg7xzPmNXr6h
dchGFfFWSuhd1amtTnwdccAwoWWjDE29qalLlMtGkprAtxrHXKQWoInhY2q4FKibZZoZCF0HdE6RYBsU2ERtedtEJoy/zA1c
srot62QrqykYNl/VRVK9ldQWCtcSxAylOtYlTRgZ1gandb87QzyTqqAGK9UJE+kuK6pdWYDz/8+4HFGBvbocoT3zHFjXvzTJ
hJvckolilWbtAVZL1i2z0a7NrlQyrRKmbBLK7NlPBdssEzJmSuOChLDf9PCh5z7Bkfy1JfP/3ZL5f7Rk/mrJmhzIRodbpF2c
X/WWA56guSR1H9zYgqaY+OY1xn/cxWLx+GJx0Dufz3vW7lkoOp/fjYIgiCweZVkWdTpn1n4T/QTjSqr3"""


def test_models_converted_before_still_load():
    x = np.arange(8, dtype=F32).reshape(2, 4) - 3
    w = np.arange(12, dtype=F32).reshape(4, 3) / 10
    static = rt.Model.load(zlib.decompress(base64.b64decode("".join(_OLD_STATIC.split()))))
    assert static.dynamic_mode is None and static.shape_ranges == {}
    np.testing.assert_allclose(static.execute([x])[0], np.maximum(x @ w, 0), rtol=1e-5)
    batch = rt.Model.load(zlib.decompress(base64.b64decode("".join(_OLD_BATCH.split()))))
    assert batch.dynamic_mode == "batch" and batch.dynamic_batch_sizes == [1, 2]
    batch.set_dynamic_batch_size(1)
    np.testing.assert_allclose(batch.execute([x[:1]])[0], np.maximum(x[:1] @ w, 0), rtol=1e-5)


def test_corrupt_range_header_is_refused():
    data, _ = convert_to_bytes(conv_pool(), "Ascend910B2", "x:1~2,3,8~16,8~16")
    header, blob = parse(data)
    from rt.graph.format import pack
    weights = [(w["name"], np.frombuffer(blob, w["dtype"], int(np.prod(w["shape"])),
                                         w["offset"]).reshape(w["shape"]))
               for w in header["weights"]]
    header["dynamic_shape"]["ranges"]["x"][2] = [9, 3]
    del header["weights"], header["weight_bytes"]
    with pytest.raises(rt.AclError, match="dynamic_shape range of 'x' must be one \\[lo, hi\\] "
                       "per dim") as e:
        rt.Model.load(pack(header, weights))
    assert e.value.code == 100012


def test_convert_writes_gear_file(tmp_path):
    out = convert(conv_pool(), str(tmp_path / "g"), "Ascend910B2", "x:1,3,-1,-1",
                  dynamic_image_size="8,8;16,8")
    header, _ = parse((tmp_path / "g.om").read_bytes())
    gears = header["dynamic_gears"]
    assert out["dynamic_gears"] == gears["gears"] == [[8, 8], [16, 8]] and gears["main"] == 1
    assert gears["shapes"] == [{"x": [1, 3, 8, 8]}, {"x": [1, 3, 16, 8]}]
    assert list(gears["variants"]) == ["0"] and gears["format"] == "NCHW"


def test_range_model_needs_onnx_at_execute(monkeypatch):
    model = rt.Model.load(convert_to_bytes(conv_pool(), "Ascend910B2", "x:1~2,3,8,8")[0])
    model.execute([np.zeros((2, 3, 8, 8), F32)])          # the main graph: no onnx needed
    monkeypatch.setitem(sys.modules, "onnx", None)          # as if onnx were not installed
    with pytest.raises(rt.AclError, match=r"model execute: a model converted with --input_shape "
                       r"ranges needs the onnx package at execute .* pip install") as e:
        model.execute([np.zeros((1, 3, 8, 8), F32)])
    assert e.value.code == 200006                           # ACL_ERROR_FEATURE_UNSUPPORTED
