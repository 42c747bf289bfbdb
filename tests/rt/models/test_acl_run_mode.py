"""ACL_DEVICE run mode (ASCEND_EMU_RUN_MODE=ACL_DEVICE, docs/acl.md): the program as run on the
board (an Atlas 200 DK), where its own memory is the device's: acl.rt.get_run_mode says so,
acl.util.ptr_to_bytes / ptr_to_numpy read device memory, and single ops and models take host
buffers (bytes_to_ptr / numpy_to_ptr) as inputs and outputs, on the AI CPU and on the AI Core.
In ACL_HOST mode (the default) the same calls are refused as before."""
import json

import numpy as np
import pytest

import rt.acl as acl
from rt import log as rt_log
from rt.acl import op as acl_op
from rt.atc.__main__ import main as atc_main
from rt.errors import AclError

F16, I32 = 1, 3


def _d(shape, typ):
    return {"format": "ND", "shape": list(shape), "type": typ}


OPS = [{"op": "Slice", "input_desc": [_d((60, 30), "float16"), _d((2,), "int32"),
                                       _d((2,), "int32")],
        "output_desc": [_d((13, 7), "float16")], "attr": []},
       {"op": "Add", "input_desc": [_d((9, 33), "float32"), _d((9, 33), "float32")],
        "output_desc": [_d((9, 33), "float32")], "attr": []}]


@pytest.fixture
def stream(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("ASCEND_PROCESS_LOG_PATH", str(tmp_path / "log"))
    monkeypatch.setenv("ASCEND_EMU_SOC", "Ascend310")
    rt_log.configure()
    acl_op._reset_for_tests()
    (tmp_path / "ops.json").write_text(json.dumps(OPS))
    assert atc_main(["--singleop", str(tmp_path / "ops.json"), "--output",
                     str(tmp_path / "m"), "--soc_version", "Ascend310"]) == 0
    capsys.readouterr()
    assert acl.init() in (0, acl.ACL_ERROR_REPEAT_INITIALIZE)
    assert acl.rt.set_device(0) == 0
    assert acl.op.set_model_dir(str(tmp_path / "m")) == 0
    s, ret = acl.rt.create_stream()
    assert ret == 0
    yield s
    assert acl.rt.destroy_stream(s) == 0
    acl_op._reset_for_tests()


def _desc(typ, shape):
    return acl.create_tensor_desc(typ, list(shape), acl.ACL_FORMAT_ND)


def _slice_on_host_buffers(stream, x, off, size):
    """acl_execute_slice's pattern: inputs from bytes_to_ptr, the output in acl.rt.malloc
    memory read back with ptr_to_bytes. Returns (execute ret, sync ret, output or None)."""
    keep = [x.tobytes(), off.tobytes(), size.tobytes()]
    descs = [_desc(F16, x.shape), _desc(I32, (2,)), _desc(I32, (2,))]
    bufs = [acl.create_data_buffer(acl.util.bytes_to_ptr(b), len(b)) for b in keep]
    out_desc = _desc(F16, (13, 7))
    out, ret = acl.rt.malloc(13 * 7 * 2, 0)
    assert ret == 0
    h, ret = acl.op.create_handle("Slice", descs, [out_desc], acl.op.create_attr())
    assert ret == 0, acl.get_recent_err_msg()
    r1 = acl.op.execute_with_handle(h, bufs, [acl.create_data_buffer(out, 13 * 7 * 2)], stream)
    r2 = acl.rt.synchronize_stream(stream)
    got = None
    if r1 == r2 == 0:
        got = np.frombuffer(acl.util.ptr_to_bytes(out, 13 * 7 * 2), np.float16).reshape(13, 7)
    return r1, r2, got


def test_board_mode_reads_device_memory_and_feeds_host_buffers(stream, monkeypatch):
    monkeypatch.setenv("ASCEND_EMU_RUN_MODE", "ACL_DEVICE")
    assert acl.rt.get_run_mode() == (acl.ACL_DEVICE, 0)
    x = (np.arange(60 * 30) % 251).astype(np.float16).reshape(60, 30)
    off, size = np.array([41, 19], np.int32), np.array([13, 7], np.int32)
    r1, r2, got = _slice_on_host_buffers(stream, x, off, size)
    assert (r1, r2) == (0, 0), acl.get_recent_err_msg()
    np.testing.assert_array_equal(got, x[41:54, 19:26])
    # an AI Core op (Add) writing straight into a numpy array the program owns
    a = np.random.default_rng(1).standard_normal((9, 33)).astype(np.float32)
    b = np.random.default_rng(2).standard_normal((9, 33)).astype(np.float32)
    y = np.full((9, 33), np.nan, np.float32)
    d = _desc(0, (9, 33))
    bufs = [acl.create_data_buffer(acl.util.numpy_to_ptr(v), v.nbytes) for v in (a, b, y)]
    assert acl.op.execute_v2("Add", [d, d], bufs[:2], [d], bufs[2:], acl.op.create_attr(),
                             stream) == 0, acl.get_recent_err_msg()
    assert acl.rt.synchronize_stream(stream) == 0
    np.testing.assert_allclose(y, a + b, rtol=1e-6)


def test_host_mode_refuses_both(stream, monkeypatch):
    monkeypatch.delenv("ASCEND_EMU_RUN_MODE", raising=False)
    assert acl.rt.get_run_mode() == (acl.ACL_HOST, 0)
    x = np.ones((60, 30), np.float16)
    r1, _, got = _slice_on_host_buffers(stream, x, np.zeros(2, np.int32),
                                        np.array([13, 7], np.int32))
    assert r1 != 0 and got is None
    p, _ = acl.rt.malloc(16, 0)
    with pytest.raises(AclError, match=r"ptr_to_bytes: ptr must be a host address, got "
                                       r"device address"):
        acl.util.ptr_to_bytes(p, 16)
    monkeypatch.setenv("ASCEND_EMU_RUN_MODE", "device")
    assert acl.rt.get_run_mode()[1] == acl.ACL_ERROR_RT_PARAM_INVALID
    assert "ASCEND_EMU_RUN_MODE must be ACL_HOST or ACL_DEVICE, got 'device'" in \
        acl.get_recent_err_msg()


def test_the_add_above_runs_on_the_ai_core(stream, monkeypatch):
    """The Add of the board-mode test takes the AI Core path (a kernel on the staged buffers)."""
    monkeypatch.setenv("ASCEND_EMU_RUN_MODE", "ACL_DEVICE")
    m = acl_op._find("Add", [{"type": "float32", "format": "ND", "shape": [9, 33]}] * 2,
                     [{"type": "float32", "format": "ND", "shape": [9, 33]}],
                     acl.op.create_attr(), "acl.op.execute_v2")
    assert acl_op._bind(m)[0] == "AI_CORE"


@pytest.mark.parametrize("mode", ["ACL_DEVICE", "ACL_HOST"])
def test_model_execute_on_the_programs_own_memory(stream, tmp_path, monkeypatch, mode):
    """acl.mdl.execute with data buffers on numpy arrays (numpy_to_ptr): as on the board, the
    output lands in the program's array and equals onnx.reference's; as ACL_HOST, refused."""
    from onnx.reference import ReferenceEvaluator

    import onnx_models
    from rt.atc import convert
    monkeypatch.setenv("ASCEND_EMU_RUN_MODE", mode)
    model = onnx_models.cnn(seed=3)
    convert(model, str(tmp_path / "cnn"), "Ascend310")
    model_id, ret = acl.mdl.load_from_file(str(tmp_path / "cnn.om"))
    assert ret == 0
    x = np.random.default_rng(4).standard_normal((1, 3, 12, 12)).astype(np.float32)
    y = np.full((1, 10), np.nan, np.float32)
    ins, outs = acl.mdl.create_dataset(), acl.mdl.create_dataset()
    assert acl.mdl.add_dataset_buffer(
        ins, acl.create_data_buffer(acl.util.numpy_to_ptr(x), x.nbytes))[1] == 0
    assert acl.mdl.add_dataset_buffer(
        outs, acl.create_data_buffer(acl.util.numpy_to_ptr(y), y.nbytes))[1] == 0
    ret = acl.mdl.execute(model_id, ins, outs)
    if mode == "ACL_HOST":
        assert ret == acl.ACL_ERROR_RT_PARAM_INVALID and np.isnan(y).all()
    else:
        assert ret == 0, acl.get_recent_err_msg()
        (want,) = ReferenceEvaluator(model).run(None, {model.graph.input[0].name: x})
        np.testing.assert_allclose(y, want, rtol=1e-4, atol=1e-6)
    assert acl.mdl.unload(model_id) == 0
