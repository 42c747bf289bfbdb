"""acl.op: single ops compiled by `python -m rt.atc --singleop` and run by acl.op.execute_v2 on the
kernel library (AI Core) or their numpy reference (AI CPU); tensor descs and attributes; the
errors, with their codes and messages."""
import json
import os
import pathlib
import threading

import numpy as np
import pytest

import rt
import rt.acl as acl
from rt import log as rt_log
from rt.acl import op as acl_op
from rt.atc.__main__ import main as atc_main
from rt.errors import (ACL_ERROR_INVALID_FILE, ACL_ERROR_INVALID_PARAM,
                       ACL_ERROR_INVALID_RESOURCE_HANDLE, ACL_ERROR_OP_NOT_FOUND,
                       ACL_ERROR_PARSE_MODEL)

F32, F16 = "float32", "float16"


def _d(shape, typ=F32, fmt="ND"):
    return {"format": fmt, "shape": list(shape), "type": typ}


def _op(op, ins, outs, **attrs):
    types = {bool: "bool", int: "int", float: "float", list: "list_int"}
    return {"op": op, "input_desc": [_d(*i) for i in ins], "output_desc": [_d(*o) for o in outs],
            "attr": [{"name": k, "type": types[type(v)], "value": v} for k, v in attrs.items()]}


OPS = [
    _op("Add", [((8, 64),), ((8, 64),)], [((8, 64),)]),
    _op("Add", [((8, 64), F16), ((8, 64), F16)], [((8, 64), F16)]),
    _op("Add", [((8, 1),), ((8, 64),)], [((8, 64),)]),                  # broadcast: AI CPU
    _op("Sub", [((8, 64),), ((64,),)], [((8, 64),)]),                   # row vector: AI Core
    _op("Mul", [((8, 64),), ((8, 64),)], [((8, 64),)]),
    _op("Relu", [((8, 64),)], [((8, 64),)]),
    _op("MatMul", [((16, 32),), ((32, 24),)], [((16, 24),)]),
    _op("MatMulV2", [((16, 32),), ((32, 24),), ((24,),)], [((16, 24),)]),
    _op("MatMul", [((16, 32),), ((24, 32),)], [((16, 24),)], transpose_x2=True),
    _op("SoftmaxV2", [((8, 64),)], [((8, 64),)]),
    _op("LayerNorm", [((8, 64),), ((64,),), ((64,),)], [((8, 64),), ((8, 1),), ((8, 1),)],
        begin_norm_axis=1, begin_params_axis=1, epsilon=1e-5),
    _op("LayerNorm", [((4, 8),), ((4, 8),), ((4, 8),)], [((4, 8),), ((1, 1),), ((1, 1),)]),
]


@pytest.fixture(autouse=True)
def _quiet_logs(monkeypatch, tmp_path):
    """Failing calls write plog files: keep them in the test's directory."""
    monkeypatch.setenv("ASCEND_PROCESS_LOG_PATH", str(tmp_path / "log"))
    rt_log.configure()
    acl_op._reset_for_tests()
    yield
    acl_op._reset_for_tests()


@pytest.fixture
def model_dir(tmp_path, capsys):
    path = tmp_path / "ops.json"
    path.write_text(json.dumps(OPS))
    out = tmp_path / "op_models"
    assert atc_main(["--singleop", str(path), "--output", str(out),
                     "--soc_version", "Ascend910B2"]) == 0
    assert f"ATC run success: {len(OPS)} single-op model(s)" in capsys.readouterr().out
    return str(out)


@pytest.fixture
def stream(model_dir):
    assert acl.init() in (0, acl.ACL_ERROR_REPEAT_INITIALIZE)
    assert acl.rt.set_device(0) == 0
    assert acl.op.set_model_dir(model_dir) == 0
    s, ret = acl.rt.create_stream()
    assert ret == 0
    yield s
    assert acl.rt.destroy_stream(s) == 0


class _Tensors:
    """Device buffers + descs for a list of host arrays (inputs) or (shape, dtype) (outputs)."""

    def __init__(self, items, upload: bool):
        self.descs, self.buffers, self.ptrs, self.specs = [], [], [], []
        for it in items:
            shape, dtype = (it.shape, it.dtype) if upload else it
            dtype = np.dtype(dtype)
            d = acl.create_tensor_desc(acl.ACL_FLOAT16 if dtype == np.float16 else acl.ACL_FLOAT,
                                       list(shape), acl.ACL_FORMAT_ND)
            assert d != 0
            size = acl.get_tensor_desc_size(d)
            p, ret = acl.rt.malloc(size, acl.ACL_MEM_MALLOC_HUGE_FIRST)
            assert ret == 0
            if upload:
                a = np.ascontiguousarray(it)
                assert acl.rt.memcpy(p, size, acl.util.numpy_to_ptr(a), size,
                                     acl.ACL_MEMCPY_HOST_TO_DEVICE) == 0
            self.descs.append(d)
            self.buffers.append(acl.create_data_buffer(p, size))
            self.ptrs.append(p)
            self.specs.append((tuple(shape), dtype))

    def download(self):
        outs = []
        for p, (shape, dtype) in zip(self.ptrs, self.specs):
            h = np.empty(shape, dtype)
            assert acl.rt.memcpy(acl.util.numpy_to_ptr(h), h.nbytes, p, h.nbytes,
                                 acl.ACL_MEMCPY_DEVICE_TO_HOST) == 0
            outs.append(h)
        return outs

    def free(self):
        for d, b, p in zip(self.descs, self.buffers, self.ptrs):
            acl.destroy_tensor_desc(d)
            assert acl.destroy_data_buffer(b) == 0 and acl.rt.free(p) == 0


def _attr(**attrs):
    a = acl.op.create_attr()
    for k, v in attrs.items():
        setter = {bool: acl.op.set_attr_bool, int: acl.op.set_attr_int,
                  float: acl.op.set_attr_float, list: acl.op.set_attr_list_int}[type(v)]
        assert setter(a, k, v) == 0
    return a


def _run(op, ins, outs, stream, **attrs):
    x, y = _Tensors(ins, True), _Tensors(outs, False)
    attr = _attr(**attrs)
    ret = acl.op.execute_v2(op, x.descs, x.buffers, y.descs, y.buffers, attr, stream)
    assert ret == 0, acl.get_recent_err_msg()
    engine = acl.op.engine_of(op, x.descs, y.descs, attr)
    assert acl.rt.synchronize_stream(stream) == 0
    got = y.download()
    acl.op.destroy_attr(attr)
    x.free()
    y.free()
    return got, engine


def _ln(x, g, b, axis, eps):
    axes = tuple(range(axis, x.ndim))
    m = x.mean(axis=axes, keepdims=True)
    v = ((x - m) ** 2).mean(axis=axes, keepdims=True)
    return (x - m) / np.sqrt(v + eps) * g + b, m, v


def _softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def test_each_op_matches_numpy(stream, mode, monkeypatch):
    monkeypatch.setenv("ASCENDC_INTERPRET", "1" if mode == "interpret" else "0")
    rng = np.random.default_rng(7)

    def r(*shape, dt=np.float32):
        return rng.standard_normal(shape).astype(dt)
    x, y, row = r(8, 64), r(8, 64), r(64)
    a, b, bt, bias = r(16, 32), r(32, 24), r(24, 32), r(24)
    g, be = r(64), r(64)
    h1, h2 = r(8, 64, dt=np.float16), r(8, 64, dt=np.float16)
    col = r(8, 1)
    f32 = np.float32
    cases = [  # op, inputs, output specs, attrs, references, engine
        ("Add", [x, y], [((8, 64), f32)], {}, [x + y], "AI_CORE"),
        ("Add", [h1, h2], [((8, 64), np.float16)], {}, [h1 + h2], "AI_CORE"),
        ("Add", [col, y], [((8, 64), f32)], {}, [col + y], "AI_CPU"),
        ("Sub", [x, row], [((8, 64), f32)], {}, [x - row], "AI_CORE"),
        ("Mul", [x, y], [((8, 64), f32)], {}, [x * y], "AI_CORE"),
        ("Relu", [x], [((8, 64), f32)], {}, [np.maximum(x, 0)], "AI_CORE"),
        ("MatMul", [a, b], [((16, 24), f32)], {}, [a @ b], "AI_CORE"),
        ("MatMulV2", [a, b, bias], [((16, 24), f32)], {}, [a @ b + bias], "AI_CORE"),
        ("MatMul", [a, bt], [((16, 24), f32)], {"transpose_x2": True}, [a @ bt.T], "AI_CPU"),
        ("SoftmaxV2", [x], [((8, 64), f32)], {}, [_softmax(x)], "AI_CORE"),
        ("LayerNorm", [x, g, be], [((8, 64), f32), ((8, 1), f32), ((8, 1), f32)],
         {"begin_norm_axis": 1, "begin_params_axis": 1, "epsilon": 1e-5},
         list(_ln(x, g, be, 1, 1e-5)), "AI_CORE"),
    ]
    for op, ins, outs, attrs, refs, engine in cases:
        got, ran_on = _run(op, ins, outs, stream, **attrs)
        assert ran_on == engine, (op, attrs)
        for out, ref in zip(got, refs):
            tol = 2e-3 if out.dtype == np.float16 else 1e-4
            np.testing.assert_allclose(out, ref, rtol=tol, atol=tol, err_msg=op)


def test_layernorm_over_all_axes_runs_on_ai_cpu(stream):
    rng = np.random.default_rng(2)
    x, g, b = (rng.standard_normal((4, 8)).astype(np.float32) for _ in range(3))
    got, engine = _run("LayerNorm", [x, g, b], [((4, 8), np.float32), ((1, 1), np.float32),
                                                ((1, 1), np.float32)], stream)
    assert engine == "AI_CPU"
    for out, ref in zip(got, _ln(x, g, b, 0, 1e-7)):
        np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-4)


def test_execute_is_async_on_the_stream_and_profiled(stream):
    rng = np.random.default_rng(3)
    x, y = rng.standard_normal((2, 8, 64)).astype(np.float32)
    gate = threading.Event()
    acl.rt.stream_of(stream, "test").launch_host_func(gate.wait)     # holds the stream
    xs, zs = _Tensors([x, y], True), _Tensors([((8, 64), np.float32)], False)
    with rt.profile() as prof:
        assert acl.op.execute_v2("Add", xs.descs, xs.buffers, zs.descs, zs.buffers, 0,
                                 stream) == 0
        # returned while the op is still queued behind the gate
        assert acl.rt.stream_query(stream) == (acl.ACL_STREAM_STATUS_NOT_READY, 0)
        gate.set()
        assert acl.rt.synchronize_stream(stream) == 0
    np.testing.assert_allclose(zs.download()[0], x + y, rtol=1e-6)
    kernels = [r for r in prof.records if r.kind == "kernel"]
    assert [r.name for r in kernels] == ["Add (add_kernel)"]
    for t in (xs, zs):
        t.free()


def test_prepared_ops_survive_a_device_reset(model_dir):
    """A prepared MatMul holds device buffers; after reset_device it is prepared again."""
    rng = np.random.default_rng(5)
    a, b = rng.standard_normal((16, 32)).astype(np.float32), \
        rng.standard_normal((32, 24)).astype(np.float32)
    assert acl.init() in (0, acl.ACL_ERROR_REPEAT_INITIALIZE)
    for _ in range(2):
        assert acl.rt.set_device(0) == 0
        assert acl.op.set_model_dir(model_dir) == 0
        s, _ = acl.rt.create_stream()
        (c,), engine = _run("MatMul", [a, b], [((16, 24), np.float32)], s)
        assert engine == "AI_CORE"
        np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)
        assert acl.rt.destroy_stream(s) == 0
        assert acl.rt.reset_device(0) == 0


def test_ai_cpu_ops_are_labelled_in_the_profile(stream):
    a = np.ones((16, 32), np.float32)
    bt = np.ones((24, 32), np.float32)
    with rt.profile() as prof:
        _run("MatMul", [a, bt], [((16, 24), np.float32)], stream, transpose_x2=True)
    assert [(r.kind, r.name) for r in prof.records if r.kind == "aicpu"] == \
        [("aicpu", "MatMul (AI_CPU)")]


def test_uncompiled_ops_and_shapes_are_refused(stream):
    x = np.ones((8, 32), np.float32)
    xs, zs = _Tensors([x, x], True), _Tensors([((8, 32), np.float32)], False)
    assert acl.op.execute_v2("Add", xs.descs, xs.buffers, zs.descs, zs.buffers, 0,
                             stream) == ACL_ERROR_OP_NOT_FOUND
    msg = acl.get_recent_err_msg()
    assert msg.startswith(f"[{ACL_ERROR_OP_NOT_FOUND} ACL_ERROR_OP_NOT_FOUND] acl.op.execute_v2: "
                          f"op Add(float32[8, 32] ND, float32[8, 32] ND) -> (float32[8, 32] ND) "
                          f"must be compiled into the model dir (python -m rt.atc --singleop); "
                          f"compiled for Add: Add(float32[8, 64] ND, float32[8, 64] ND)"), msg
    assert acl.op.execute_v2("Conv2D", xs.descs, xs.buffers, zs.descs, zs.buffers, 0,
                             stream) == ACL_ERROR_OP_NOT_FOUND
    msg = acl.get_recent_err_msg()
    assert "op_type must be one of the single ops" in msg and "got op_type='Conv2D'" in msg
    # attributes are part of the match: a value not compiled, and a wrongly typed one
    a = np.ones((16, 32), np.float32)
    ms, mo = _Tensors([a, np.ones((32, 24), np.float32)], True), \
        _Tensors([((16, 24), np.float32)], False)
    attr = _attr(transpose_x1=True)
    assert acl.op.execute_v2("MatMul", ms.descs, ms.buffers, mo.descs, mo.buffers, attr,
                             stream) == ACL_ERROR_OP_NOT_FOUND
    assert "[transpose_x1=True, transpose_x2=False] must be compiled" in acl.get_recent_err_msg()
    bad = acl.op.create_attr()
    assert acl.op.set_attr_int(bad, "transpose_x1", 1) == 0
    assert acl.op.execute_v2("MatMul", ms.descs, ms.buffers, mo.descs, mo.buffers, bad,
                             stream) == ACL_ERROR_OP_NOT_FOUND
    assert "MatMul: attr 'transpose_x1' must have type 'bool', got type='int'" in \
        acl.get_recent_err_msg()
    for t in (xs, zs, ms, mo):
        t.free()


def test_bad_handles_and_buffers(stream):
    x = np.ones((8, 64), np.float32)
    xs, zs = _Tensors([x, x], True), _Tensors([((8, 64), np.float32)], False)
    assert acl.op.execute_v2("Add", [xs.descs[0], 4242], xs.buffers, zs.descs, zs.buffers, 0,
                             stream) == ACL_ERROR_INVALID_RESOURCE_HANDLE
    assert "acl.op.execute_v2: handle must be a live tensor desc handle, got 4242" in \
        acl.get_recent_err_msg()
    small = acl.create_data_buffer(zs.ptrs[0], 100)
    assert acl.op.execute_v2("Add", xs.descs, xs.buffers, zs.descs, [small], 0,
                             stream) == ACL_ERROR_INVALID_PARAM
    assert "acl.op.execute_v2: outputs[0] must hold 2048 bytes (float32[8, 64]), got size=100" \
        in acl.get_recent_err_msg()
    assert acl.op.execute_v2("Add", xs.descs, xs.buffers[:1], zs.descs, zs.buffers, 0,
                             stream) == ACL_ERROR_INVALID_PARAM
    assert "input_desc and inputs must be lists of the same length" in acl.get_recent_err_msg()
    assert acl.op.execute_v2("Add", xs.descs, xs.buffers, zs.descs, zs.buffers, 999,
                             stream) == ACL_ERROR_INVALID_RESOURCE_HANDLE
    assert "acl.op.execute_v2: handle must be a live op attr handle, got 999" in \
        acl.get_recent_err_msg()
    assert acl.destroy_data_buffer(small) == 0
    for t in (xs, zs):
        t.free()


def test_nothing_loaded_is_op_not_found():
    assert acl.init() in (0, acl.ACL_ERROR_REPEAT_INITIALIZE)
    assert acl.rt.set_device(0) == 0
    x = np.ones((8, 64), np.float32)
    xs, zs = _Tensors([x, x], True), _Tensors([((8, 64), np.float32)], False)
    assert acl.op.execute_v2("Add", xs.descs, xs.buffers, zs.descs, zs.buffers, 0,
                             0) == ACL_ERROR_OP_NOT_FOUND
    assert "acl.op.execute_v2: no single-op model is loaded; call acl.op.set_model_dir(dir)" in \
        acl.get_recent_err_msg()
    for t in (xs, zs):
        t.free()


def test_set_model_dir_refuses_missing_and_corrupt_dirs(tmp_path, model_dir):
    assert acl.op.set_model_dir(str(tmp_path / "nope")) == ACL_ERROR_INVALID_FILE
    assert "acl.op.set_model_dir: model_dir must be an existing directory" in \
        acl.get_recent_err_msg()
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "0_Add.json").write_text("{not json")
    assert acl.op.set_model_dir(str(bad)) == ACL_ERROR_PARSE_MODEL
    assert "must be a readable JSON file" in acl.get_recent_err_msg()
    # a hand-edited file is re-checked: an op outside the catalogue is refused
    name = sorted(os.listdir(model_dir))[0]
    m = json.loads(open(os.path.join(model_dir, name)).read())
    m["op"] = "Exec"
    (bad / "0_Add.json").write_text(json.dumps(m))
    assert acl.op.set_model_dir(str(bad)) == ACL_ERROR_PARSE_MODEL
    assert "op must be one of" in acl.get_recent_err_msg()
    m["op"], m["version"] = "Add", 99
    (bad / "0_Add.json").write_text(json.dumps(m))
    assert acl.op.set_model_dir(str(bad)) == ACL_ERROR_PARSE_MODEL
    assert "must have version 1, got version=99" in acl.get_recent_err_msg()


def test_set_model_dir_reads_three_directory_levels(tmp_path, model_dir):
    files = {json.loads(open(os.path.join(model_dir, f)).read())["op"]: f
             for f in sorted(os.listdir(model_dir))}
    deep = tmp_path / "root" / "a" / "b"
    (deep / "c").mkdir(parents=True)
    (deep / "relu.json").write_text(open(os.path.join(model_dir, files["Relu"])).read())
    (deep / "c" / "mul.json").write_text(open(os.path.join(model_dir, files["Mul"])).read())
    assert acl.init() in (0, acl.ACL_ERROR_REPEAT_INITIALIZE)
    assert acl.rt.set_device(0) == 0
    assert acl.op.set_model_dir(str(tmp_path / "root")) == 0
    x = [acl.create_tensor_desc(acl.ACL_FLOAT, [8, 64], acl.ACL_FORMAT_ND) for _ in range(3)]
    assert acl.op.engine_of("Relu", x[:1], x[2:]) == "AI_CORE"           # root/a/b: loaded
    with pytest.raises(rt.AclError, match="compiled for Mul: none"):    # root/a/b/c: too deep
        acl.op.engine_of("Mul", x[:2], x[2:])
    for d in x:
        acl.destroy_tensor_desc(d)


@pytest.mark.parametrize("entry, message", [
    (_op("Conv", [((1, 3, 8, 8),)], [((1, 3, 8, 8),)]), "entry 0: op must be one of"),
    (_op("Add", [((8, 64),), ((8, 64),)], [((8, 32),)]),
     "Add: output_desc[0] must be float32[8, 64] (dimensions of 1 aside) for these inputs and "
     "attrs, got float32[8, 32]"),
    (_op("Add", [((8, 64),), ((8, 63),)], [((8, 64),)]), "Add: input shapes must broadcast"),
    (_op("MatMul", [((4, 5),), ((6, 7),)], [((4, 7),)]),
     "MatMul: the reduced dimensions must match"),
    (_op("Relu", [((8, -1),)], [((8, 4),)]), "shape must be a list of ints >= 0"),
    (_op("Relu", [((8, 4), "complex64")], [((8, 4),)]), "input_desc[0] type must be one of"),
    (_op("Relu", [((8, 4), F32, "FRACTAL_NZ")], [((8, 4),)]), "format must be one of"),
    (_op("MatMul", [((4, 5),), ((5, 7),)], [((4, 7),)], alpha=1.0),
     "MatMul: attr names must be among ['transpose_x1', 'transpose_x2'], got ['alpha']"),
    (_op("LayerNorm", [((4, 8),), ((8,),), ((8,),)], [((4, 8),)]),
     "LayerNorm: output_desc must have 3 entries, got 1"),
])
def test_atc_singleop_refuses_bad_definitions(tmp_path, capsys, entry, message):
    path = tmp_path / "ops.json"
    path.write_text(json.dumps([entry]))
    out = tmp_path / "out"
    assert atc_main(["--singleop", str(path), "--output", str(out),
                     "--soc_version", "Ascend910B2"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("ATC run failed: ") and message in err, err
    assert not out.exists()                       # nothing written


def test_atc_singleop_refuses_a_bad_soc_and_file(tmp_path, capsys):
    path = tmp_path / "ops.json"
    path.write_text(json.dumps(OPS[:1]))
    assert atc_main(["--singleop", str(path), "--output", str(tmp_path / "o"),
                     "--soc_version", "Ascend999"]) == 1
    assert "--soc_version must be one of" in capsys.readouterr().err
    assert atc_main(["--singleop", str(tmp_path / "missing.json"), "--output",
                     str(tmp_path / "o"), "--soc_version", "Ascend910B2"]) == 1
    assert "--singleop must name a readable file" in capsys.readouterr().err
    assert atc_main(["--output", str(tmp_path / "o"), "--soc_version", "Ascend910B2"]) == 1
    assert "ATC run failed: atc: --model (or --singleop) is required" in capsys.readouterr().err


def test_tensor_desc_getters():
    d = acl.create_tensor_desc(acl.ACL_FLOAT16, [2, 3, 4], acl.ACL_FORMAT_NCHW)
    assert d != 0
    assert acl.get_tensor_desc_type(d) == acl.ACL_FLOAT16
    assert acl.get_tensor_desc_format(d) == acl.ACL_FORMAT_NCHW
    assert acl.get_tensor_desc_num_dims(d) == 3
    assert acl.get_tensor_desc_element_count(d) == 24
    assert acl.get_tensor_desc_size(d) == 48
    assert [acl.get_tensor_desc_dim(d, i) for i in range(3)] == [2, 3, 4]
    assert acl.get_tensor_desc_dim_v2(d, 1) == (3, 0)
    assert acl.get_tensor_desc_dim_v2(d, 3) == (-1, ACL_ERROR_INVALID_PARAM)
    assert "acl.get_tensor_desc_dim_v2: index must be in [0, 3), got index=3" in \
        acl.get_recent_err_msg()
    acl.set_tensor_desc_name(d, "x")
    assert acl.get_tensor_desc_name(d) == "x"
    assert acl.get_data_type_size(acl.ACL_INT64) == 8 and acl.get_data_type_size(99) == 0
    assert acl.destroy_tensor_desc(d) is None
    assert acl.get_tensor_desc_num_dims(d) == 0
    assert "acl.get_tensor_desc_num_dims: handle must be a live tensor desc handle" in \
        acl.get_recent_err_msg()
    assert acl.create_tensor_desc(77, [2], acl.ACL_FORMAT_ND) == 0
    assert "acl.create_tensor_desc: data_type must be an aclDataType" in acl.get_recent_err_msg()
    assert acl.create_tensor_desc(acl.ACL_FLOAT, [2, "x"], acl.ACL_FORMAT_ND) == 0
    assert "dims must be a list of ints >= 0" in acl.get_recent_err_msg()
    assert acl.create_tensor_desc(acl.ACL_FLOAT, [2], 123) == 0
    assert "format must be an aclFormat" in acl.get_recent_err_msg()


def test_attr_setters_check_their_values():
    a = acl.op.create_attr()
    assert acl.op.set_attr_list_int(a, "axes", [0, 1]) == 0
    assert acl.op.set_attr_list_int(a, "axes", np.array([0, 1], np.int64)) == 0
    assert acl.op.set_attr_string(a, "mode", "x") == 0
    assert acl.op.set_attr_float(a, "eps", 1) == 0
    assert acl.op.set_attr_bool(a, "flag", 1) == ACL_ERROR_INVALID_PARAM
    assert "acl.op.set_attr_bool: attr_value must be a bool value, got attr_value=1" in \
        acl.get_recent_err_msg()
    assert acl.op.set_attr_list_int(a, "axes", 3) == ACL_ERROR_INVALID_PARAM
    assert "acl.op.set_attr_list_int: attr_value must be a list of int values" in \
        acl.get_recent_err_msg()
    assert acl.op.set_attr_int(a, "", 3) == ACL_ERROR_INVALID_PARAM
    assert "attr_name must be a non-empty str" in acl.get_recent_err_msg()
    assert acl.op.destroy_attr(a) is None
    assert acl.op.set_attr_int(a, "k", 3) == ACL_ERROR_INVALID_RESOURCE_HANDLE
    assert "acl.op.set_attr_int: handle must be a live op attr handle" in \
        acl.get_recent_err_msg()


SAMPLE = '''
import sys
import numpy as np
import rt.acl as acl          # the only line that differs from a pyACL script

model_dir = sys.argv[1]
ret = acl.init(); assert ret == 0
ret = acl.rt.set_device(0); assert ret == 0
context, ret = acl.rt.create_context(0); assert ret == 0
stream, ret = acl.rt.create_stream(); assert ret == 0
ret = acl.op.set_model_dir(model_dir); assert ret == 0
a = np.arange(16 * 32, dtype=np.float32).reshape(16, 32) / 100
b = np.ones((32, 24), dtype=np.float32)
descs, bufs, devs = [], [], []
for arr in (a, b, None):
    shape = arr.shape if arr is not None else (16, 24)
    desc = acl.create_tensor_desc(acl.ACL_FLOAT, list(shape), acl.ACL_FORMAT_ND)
    size = acl.get_tensor_desc_size(desc)
    dev, ret = acl.rt.malloc(size, acl.ACL_MEM_MALLOC_HUGE_FIRST); assert ret == 0
    if arr is not None:
        ret = acl.rt.memcpy(dev, size, acl.util.numpy_to_ptr(arr), size,
                            acl.ACL_MEMCPY_HOST_TO_DEVICE); assert ret == 0
    descs.append(desc); bufs.append(acl.create_data_buffer(dev, size)); devs.append(dev)
attr = acl.op.create_attr()
ret = acl.op.set_attr_bool(attr, "transpose_x1", False); assert ret == 0
ret = acl.op.execute_v2("MatMul", descs[:2], bufs[:2], descs[2:], bufs[2:], attr, stream)
assert ret == 0, acl.get_recent_err_msg()
ret = acl.rt.synchronize_stream(stream); assert ret == 0
host, ret = acl.rt.malloc_host(16 * 24 * 4); assert ret == 0
ret = acl.rt.memcpy(host, 16 * 24 * 4, devs[2], 16 * 24 * 4, acl.ACL_MEMCPY_DEVICE_TO_HOST)
out = acl.util.ptr_to_numpy(host, (16, 24), 11)
assert np.allclose(out, a @ b, rtol=1e-5), out
acl.op.destroy_attr(attr)
for desc, buf, dev in zip(descs, bufs, devs):
    acl.destroy_tensor_desc(desc)
    assert acl.destroy_data_buffer(buf) == 0 and acl.rt.free(dev) == 0
assert acl.rt.free_host(host) == 0
assert acl.rt.destroy_stream(stream) == 0
assert acl.rt.destroy_context(context) == 0
assert acl.rt.reset_device(0) == 0
assert acl.finalize() == 0
print("single op sample ok")
'''


def test_pyacl_single_op_sample_flow(tmp_path, model_dir):
    import subprocess
    import sys
    script = tmp_path / "sample.py"
    script.write_text(SAMPLE)
    root = str(pathlib.Path(__file__).resolve().parents[3])
    env = dict(os.environ, ASCENDC_CHECKED="1", PYTHONPATH=root, ASCEND_SLOG_PRINT_TO_STDOUT="1")
    r = subprocess.run([sys.executable, str(script), model_dir], env=env, capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-3000:]
    assert r.stdout.strip().endswith("single op sample ok") and "[ERROR]" not in r.stdout
