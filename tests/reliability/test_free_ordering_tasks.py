"""Stream-ordered frees hold for every task kind: a buffer freed while a queued AI CPU op
(acl.op.execute_v2), a model's AI CPU node, a host function or a blocking callback still uses it
goes back to the pool only once that task has run, so it never reads the next owner's data."""
import json
import threading

import numpy as np
import pytest
from onnx import TensorProto, helper

import rt
import rt.acl as acl
from rt.atc import convert_to_bytes
from rt.atc.__main__ import main as atc_main
from rt.memory import device_view

N = 512


_GATES: list = []


@pytest.fixture(autouse=True)
def _open_gates():
    yield
    while _GATES:           # a failed test must not leave a stream blocked for the teardown
        _GATES.pop().set()


def _gated(stream):
    """Hold `stream` until the returned gate is set (a host function waits for it)."""
    gate = threading.Event()
    _GATES.append(gate)
    stream.launch_host_func(gate.wait)
    return gate


def _next_owner(nbytes, value):
    """The allocation a new owner would get, filled with its own data."""
    q = rt.malloc(nbytes)
    rt.memcpy(q, np.full(nbytes // 4, value, np.float32), nbytes, rt.MemcpyKind.HOST_TO_DEVICE)
    return q


def test_ai_cpu_single_op_keeps_its_freed_input(tmp_path, capsys, dev0):
    ops = [{"op": "Add", "input_desc": [{"format": "ND", "shape": [8, 1], "type": "float32"},
                                        {"format": "ND", "shape": [8, 64], "type": "float32"}],
            "output_desc": [{"format": "ND", "shape": [8, 64], "type": "float32"}]}]
    (tmp_path / "ops.json").write_text(json.dumps(ops))
    assert atc_main(["--singleop", str(tmp_path / "ops.json"), "--output",
                     str(tmp_path / "om"), "--soc_version", "Ascend910B2"]) == 0
    assert acl.op.set_model_dir(str(tmp_path / "om")) == 0
    handle, ret = acl.rt.create_stream()
    assert ret == 0
    s = acl.rt.stream_of(handle, "test")
    descs = [acl.create_tensor_desc(acl.ACL_FLOAT, d["shape"], acl.ACL_FORMAT_ND)
             for d in ops[0]["input_desc"] + ops[0]["output_desc"]]
    host = [np.full((8, 1), 2, np.float32), np.full((8, 64), 3, np.float32)]
    ptrs = []
    for h in host:
        p = rt.malloc(h.nbytes)
        rt.memcpy(p, h, h.nbytes, rt.MemcpyKind.HOST_TO_DEVICE)
        ptrs.append(p)
    out = rt.malloc(8 * 64 * 4)
    bufs = [acl.create_data_buffer(p, h.nbytes) for p, h in zip(ptrs, host)]
    obuf = acl.create_data_buffer(out, 8 * 64 * 4)
    assert acl.op.engine_of("Add", descs[:2], descs[2:], 0) == "AI_CPU"
    gate = _gated(s)
    assert acl.op.execute_v2("Add", descs[:2], bufs, descs[2:], [obuf], 0, handle) == 0
    assert acl.rt.free(ptrs[1]) == 0                     # freed while the op is queued
    owner = _next_owner(8 * 64 * 4, -1)
    assert int(owner) != int(ptrs[1])
    gate.set()
    s.synchronize()
    got = np.empty((8, 64), np.float32)
    rt.memcpy(got, out, got.nbytes, rt.MemcpyKind.DEVICE_TO_HOST)
    assert np.all(got == 5.0)                             # not 2 + (-1)


def _neg_model():
    g = helper.make_graph([helper.make_node("Neg", ["x"], ["y"])], "neg",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [N])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [N])])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def test_model_ai_cpu_node_keeps_its_freed_input(dev0):
    model = rt.Model.load(convert_to_bytes(_neg_model(), "Ascend910B2", "x:512")[0])
    assert model.engines() == {"Neg": "AI_CPU"} or set(model.engines().values()) == {"AI_CPU"}
    s = rt.Stream()
    x = rt.to_device(np.full(N, -5, np.float32))
    y = rt.device_empty((N,), np.float32)
    gate = _gated(s)
    model.execute([x], s, [y])
    addr = int(x.ptr)
    x.free()
    owner = _next_owner(N * 4, -2)
    assert int(owner) != addr
    gate.set()
    s.synchronize()
    assert np.all(y.copy_to_host() == 5.0)                # not -(-2)


def test_host_func_and_callback_keep_their_freed_buffer(dev0):
    s = rt.Stream()
    p = rt.malloc(N * 4)
    rt.memcpy(p, np.full(N, 5, np.float32), N * 4, rt.MemcpyKind.HOST_TO_DEVICE)
    seen = []
    gate = _gated(s)
    s.launch_host_func(lambda: seen.append(device_view(p, N * 4).view(np.float32).copy()))
    rt.free(p)
    owner = _next_owner(N * 4, 2)
    assert int(owner) != int(p)
    gate.set()
    s.synchronize()
    assert np.all(seen[0] == 5.0)                          # not the next owner's 2.0
    q = rt.malloc(N * 4)                                   # it is back in the pool now
    assert int(q) == int(p)


def test_blocking_callback_keeps_its_freed_buffer(dev0):
    handle, ret = acl.rt.create_stream()
    assert ret == 0
    s = acl.rt.stream_of(handle, "test")
    p = rt.malloc(N * 4)
    rt.memcpy(p, np.full(N, 5, np.float32), N * 4, rt.MemcpyKind.HOST_TO_DEVICE)
    stop = threading.Event()
    seen = []

    def reporter():
        while not stop.is_set():
            acl.rt.process_report(10)
    t = threading.Thread(target=reporter)
    t.start()
    try:
        assert acl.rt.subscribe_report(t.ident, handle) == 0
        gate = _gated(s)
        assert acl.rt.launch_callback(
            lambda _: seen.append(device_view(p, N * 4).view(np.float32).copy()), None,
            acl.ACL_CALLBACK_BLOCK, handle) == 0
        rt.free(p)
        owner = _next_owner(N * 4, 2)
        assert int(owner) != int(p)
        gate.set()
        s.synchronize()
        assert acl.rt.unsubscribe_report(t.ident, handle) == 0
    finally:
        stop.set()
        t.join()
    assert np.all(seen[0] == 5.0)
