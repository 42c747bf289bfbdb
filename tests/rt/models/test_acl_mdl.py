"""acl.mdl: the official sample flow (as a separate script) and the facade's error returns."""
import os
import pathlib
import subprocess
import sys

import numpy as np
import onnx
import pytest
from onnx.reference import ReferenceEvaluator

import rt
import rt.acl as acl
from rt.atc import convert

import onnx_models

HERE = pathlib.Path(__file__).parent
ROOT = HERE.parents[2]


@pytest.fixture
def om(tmp_path):
    path = tmp_path / "cnn.onnx"
    m = onnx_models.cnn()
    onnx.save(m, path)
    return m, convert(str(path), str(tmp_path / "cnn"), "Ascend910B2")["path"]


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_the_sample_flow_runs_as_a_script(om, tmp_path, mode):
    m, path = om
    x = np.random.default_rng(1).standard_normal((1, 3, 12, 12)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    env = dict(os.environ, ASCENDC_CHECKED="1", PYTHONPATH=str(ROOT))
    r = subprocess.run([sys.executable, str(HERE / "acl_sample.py"), path, str(tmp_path / "x.npy"),
                        str(tmp_path / "y.npy"), mode], env=env, capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "sample ok" in r.stdout and "'dims': [1, 10]" in r.stdout
    ref = ReferenceEvaluator(m).run(None, {"x": x})[0]
    np.testing.assert_allclose(np.load(tmp_path / "y.npy"), ref, rtol=1e-4, atol=1e-5)


def test_descriptions_through_the_facade(om):
    _, path = om
    rt.ensure_device()
    model_id, ret = acl.mdl.load_from_file(path)
    assert ret == 0 and model_id > 0
    desc = acl.mdl.create_desc()
    assert acl.mdl.get_num_inputs(desc) == 0          # not filled yet
    assert acl.mdl.get_desc(desc, model_id) == 0
    assert acl.mdl.get_num_inputs(desc) == 1 and acl.mdl.get_num_outputs(desc) == 1
    assert acl.mdl.get_input_size_by_index(desc, 0) == 3 * 144 * 4
    assert acl.mdl.get_output_size_by_index(desc, 0) == 40
    assert acl.mdl.get_input_name_by_index(desc, 0) == "x"
    assert acl.mdl.get_input_data_type(desc, 0) == 0          # ACL_FLOAT
    assert acl.mdl.get_input_dims(desc, 0) == ({"name": "x", "dimCount": 4,
                                                "dims": [1, 3, 12, 12]}, 0)
    assert acl.mdl.get_input_index_by_name(desc, "x") == (0, 0)
    assert acl.mdl.get_input_index_by_name(desc, "y")[1] == acl.ACL_ERROR_INVALID_PARAM
    assert acl.mdl.get_input_dims(desc, 5)[1] == acl.ACL_ERROR_INVALID_PARAM
    ds = acl.mdl.create_dataset()
    buf = acl.create_data_buffer(1234, 16)
    assert acl.mdl.add_dataset_buffer(ds, buf) == (ds, 0)
    assert acl.mdl.get_dataset_num_buffers(ds) == 1 and acl.mdl.get_dataset_buffer(ds, 0) == buf
    assert acl.get_data_buffer_addr(buf) == 1234 and acl.get_data_buffer_size_v2(buf) == 16
    assert acl.mdl.execute(model_id, ds, ds) == acl.ACL_ERROR_INVALID_PARAM   # 16 < 1728 bytes
    assert "must hold 1728 bytes" in acl.get_recent_err_msg()
    assert acl.mdl.destroy_dataset(ds) == 0 and acl.destroy_data_buffer(buf) == 0
    assert acl.mdl.destroy_desc(desc) == 0 and acl.mdl.unload(model_id) == 0
    assert acl.mdl.unload(model_id) == acl.ACL_ERROR_INVALID_MODEL_ID
    assert acl.mdl.execute(model_id, 0, 0) == acl.ACL_ERROR_INVALID_MODEL_ID


def test_bad_files_through_the_facade(om, tmp_path):
    _, path = om
    data = bytearray(open(path, "rb").read())
    (tmp_path / "t.om").write_bytes(bytes(data[:-1]))
    data[-1] ^= 1
    (tmp_path / "c.om").write_bytes(bytes(data))
    assert acl.mdl.load_from_file(str(tmp_path / "t.om")) == (0, acl.ACL_ERROR_MODEL_SIZE_INVALID)
    assert acl.mdl.load_from_file(str(tmp_path / "c.om")) == (0, acl.ACL_ERROR_DESERIALIZE_MODEL)
    assert acl.mdl.query_size(str(tmp_path / "nope.om"))[2] == acl.ACL_ERROR_READ_MODEL_FAILURE
    assert acl.mdl.load_from_mem(bytes(data))[1] == acl.ACL_ERROR_DESERIALIZE_MODEL
    model_id, ret = acl.mdl.load_from_mem(open(path, "rb").read())
    assert ret == 0 and acl.mdl.unload(model_id) == 0
