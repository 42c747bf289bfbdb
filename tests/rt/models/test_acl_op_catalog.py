"""acl.op as CANN's single-op samples call it: Cast, ArgMaxV2, Slice, Transpose, Concat,
Reduce*, element-wise ops compiled by `python -m rt.atc --singleop` (const inputs included),
the handle API, acl.op.cast, acl.data_type_size, acl.set_tensor_const, and a model dir that
also holds the sample's op_list.json."""
import json

import numpy as np
import pytest

import rt.acl as acl
from rt import log as rt_log
from rt.acl import op as acl_op
from rt.atc.__main__ import main as atc_main
from rt.graph.onnx_types import NUMPY_TO_ACL


def _d(shape, typ="float32", const=None):
    d = {"format": "ND", "shape": list(shape), "type": typ}
    if const is not None:
        d.update(is_const=True, const_value=list(const))
    return d


def _attr(name, typ, value):
    return {"name": name, "type": typ, "value": value}


OPS = [
    {"op": "Cast", "input_desc": [_d((4, 6))], "output_desc": [_d((4, 6), "float16")],
     "attr": [_attr("dst_type", "int", 1)]},
    {"op": "Cast", "input_desc": [_d((4, 6))], "output_desc": [_d((4, 6), "int32")],
     "attr": [_attr("dst_type", "int", 3)]},
    {"op": "ArgMaxV2", "input_desc": [_d((4, 6)), _d((1,), "int32", [1])],
     "output_desc": [_d((4,), "int32")], "attr": []},
    {"op": "ArgMaxV2", "input_desc": [_d((4, 6)), _d((1,), "int32")],   # dimension at run time
     "output_desc": [_d((6,), "int32")], "attr": []},
    {"op": "Slice", "input_desc": [_d((5, 7)), _d((2,), "int32", [1, 2]),
                                   _d((2,), "int32", [3, -1])],
     "output_desc": [_d((3, 5))], "attr": []},
    {"op": "Transpose", "input_desc": [_d((2, 3, 4)), _d((3,), "int32", [2, 0, 1])],
     "output_desc": [_d((4, 2, 3))], "attr": []},
    {"op": "ConcatD", "input_desc": [_d((2, 3)), _d((2, 5))], "output_desc": [_d((2, 8))],
     "attr": [_attr("concat_dim", "int", 1)]},
    {"op": "ReduceSum", "input_desc": [_d((3, 4, 5)), _d((2,), "int64", [0, 2])],
     "output_desc": [_d((1, 4, 1))], "attr": [_attr("keep_dims", "bool", True)]},
    {"op": "ReduceMeanD", "input_desc": [_d((3, 4, 5))], "output_desc": [_d((3, 5))],
     "attr": [_attr("axes", "list_int", [1])]},
    {"op": "Exp", "input_desc": [_d((3, 4))], "output_desc": [_d((3, 4))], "attr": []},
    {"op": "Maximum", "input_desc": [_d((3, 4)), _d((4,))], "output_desc": [_d((3, 4))],
     "attr": []},
]


@pytest.fixture
def stream(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("ASCEND_PROCESS_LOG_PATH", str(tmp_path / "log"))
    rt_log.configure()
    acl_op._reset_for_tests()
    (tmp_path / "op_list.json").write_text(json.dumps(OPS))
    out = tmp_path / "op_models"
    assert atc_main(["--singleop", str(tmp_path / "op_list.json"), "--output", str(out),
                     "--soc_version", "Ascend310"]) == 0
    assert f"{len(OPS)} single-op model(s)" in capsys.readouterr().out
    (out / "op_list.json").write_text(json.dumps(OPS))      # the README copies it alongside
    (out / "notes.txt").write_text("not a model")
    assert acl.init() in (0, acl.ACL_ERROR_REPEAT_INITIALIZE)
    assert acl.rt.set_device(0) == 0
    assert acl.op.set_model_dir(str(out)) == 0
    s, ret = acl.rt.create_stream()
    assert ret == 0
    yield s
    assert acl.rt.destroy_stream(s) == 0
    acl_op._reset_for_tests()


class _T:
    """A tensor desc and a device buffer (uploaded from `host`, or empty of `shape, dtype`)."""

    def __init__(self, host=None, shape=None, dtype=None):
        if host is not None:
            host = np.ascontiguousarray(host)
            shape, dtype = host.shape, host.dtype
        self.shape, self.dtype = tuple(shape), np.dtype(dtype)
        self.desc = acl.create_tensor_desc(NUMPY_TO_ACL[self.dtype.name], list(shape),
                                           acl.ACL_FORMAT_ND)
        self.size = max(1, acl.get_tensor_desc_size(self.desc))
        self.ptr, ret = acl.rt.malloc(self.size, acl.ACL_MEM_MALLOC_HUGE_FIRST)
        assert ret == 0
        if host is not None:
            assert acl.rt.memcpy(self.ptr, self.size, acl.util.numpy_to_ptr(host), host.nbytes,
                                 acl.ACL_MEMCPY_HOST_TO_DEVICE) == 0
        self.buf = acl.create_data_buffer(self.ptr, self.size)

    def get(self):
        h = np.empty(self.shape, self.dtype)
        assert acl.rt.memcpy(acl.util.numpy_to_ptr(h), h.nbytes, self.ptr, h.nbytes,
                             acl.ACL_MEMCPY_DEVICE_TO_HOST) == 0
        return h


def _const(t: _T, value):
    value = np.ascontiguousarray(value, t.dtype)
    assert acl.set_tensor_const(t.desc, acl.util.numpy_to_ptr(value), value.nbytes) == 0


def _attr_handle(**attrs):
    a = acl.op.create_attr()
    for k, (typ, v) in attrs.items():
        assert getattr(acl.op, f"set_attr_{typ}")(a, k, v) == 0
    return a


def _run(stream, op, ins, outs, attr=0):
    assert acl.op.execute_v2(op, [t.desc for t in ins], [t.buf for t in ins],
                             [t.desc for t in outs], [t.buf for t in outs], attr, stream) == 0, \
        acl.get_recent_err_msg()
    assert acl.rt.synchronize_stream(stream) == 0
    return [t.get() for t in outs]


RNG = np.random.default_rng(11)
X46 = RNG.standard_normal((4, 6)).astype(np.float32)


def test_cast_by_execute_v2_acl_op_cast_and_a_cast_handle(stream):
    x, y = _T(X46), _T(shape=(4, 6), dtype=np.float16)
    (got,) = _run(stream, "Cast", [x], [y], _attr_handle(dst_type=("int", acl.ACL_FLOAT16)))
    np.testing.assert_array_equal(got, X46.astype(np.float16))
    z = _T(shape=(4, 6), dtype=np.int32)
    assert acl.op.cast(x.desc, x.buf, z.desc, z.buf, 0, stream) == 0
    assert acl.rt.synchronize_stream(stream) == 0
    np.testing.assert_array_equal(z.get(), X46.astype(np.int32))
    h, ret = acl.op.create_handle_for_cast(x.desc, y.desc, 0)
    assert ret == 0 and h
    y2 = _T(shape=(4, 6), dtype=np.float16)
    assert acl.op.execute_with_handle(h, [x.buf], [y2.buf], stream) == 0
    assert acl.rt.synchronize_stream(stream) == 0
    np.testing.assert_array_equal(y2.get(), X46.astype(np.float16))
    acl.op.destroy_handle(h)
    assert acl.op.execute_with_handle(h, [x.buf], [y2.buf], stream) == \
        acl.ACL_ERROR_INVALID_RESOURCE_HANDLE
    # a cast nobody compiled: float32 -> int8
    w = _T(shape=(4, 6), dtype=np.int8)
    assert acl.op.cast(x.desc, x.buf, w.desc, w.buf, 0, stream) == acl.ACL_ERROR_OP_NOT_FOUND
    assert "acl.op.cast: op Cast(float32[4, 6] ND) -> (int8[4, 6] ND) [dst_type=2, " \
           "truncate=False] must be compiled" in acl.get_recent_err_msg()


def test_argmax_with_a_const_dimension_and_with_one_read_at_run_time(stream):
    x, dim, y = _T(X46), _T(np.array([1], np.int32)), _T(shape=(4,), dtype=np.int32)
    # without set_tensor_const the const-compiled model does not match; the (6,) one is axis 0
    assert acl.op.execute_v2("ArgMaxV2", [x.desc, dim.desc], [x.buf, dim.buf], [y.desc],
                             [y.buf], 0, stream) == acl.ACL_ERROR_OP_NOT_FOUND
    _const(dim, [1])
    (got,) = _run(stream, "ArgMaxV2", [x, dim], [y])
    np.testing.assert_array_equal(got, X46.argmax(axis=1))
    dim0, y0 = _T(np.array([0], np.int32)), _T(shape=(6,), dtype=np.int32)
    (got,) = _run(stream, "ArgMaxV2", [x, dim0], [y0])
    np.testing.assert_array_equal(got, X46.argmax(axis=0))


def test_slice_transpose_concat_reduce_and_elementwise(stream):
    x57 = RNG.standard_normal((5, 7)).astype(np.float32)
    off, size = _T(np.array([1, 2], np.int32)), _T(np.array([3, -1], np.int32))
    _const(off, [1, 2])
    _const(size, [3, -1])
    (got,) = _run(stream, "Slice", [_T(x57), off, size], [_T(shape=(3, 5), dtype=np.float32)])
    np.testing.assert_array_equal(got, x57[1:4, 2:])
    x234 = RNG.standard_normal((2, 3, 4)).astype(np.float32)
    perm = _T(np.array([2, 0, 1], np.int32))
    _const(perm, [2, 0, 1])
    (got,) = _run(stream, "Transpose", [_T(x234), perm], [_T(shape=(4, 2, 3), dtype="float32")])
    np.testing.assert_array_equal(got, x234.transpose(2, 0, 1))
    a, b = RNG.standard_normal((2, 3)).astype(np.float32), RNG.standard_normal((2, 5)) \
        .astype(np.float32)
    (got,) = _run(stream, "ConcatD", [_T(a), _T(b)], [_T(shape=(2, 8), dtype="float32")],
                  _attr_handle(concat_dim=("int", 1)))
    np.testing.assert_array_equal(got, np.concatenate([a, b], axis=1))
    x345 = RNG.standard_normal((3, 4, 5)).astype(np.float32)
    axes = _T(np.array([0, 2], np.int64))
    _const(axes, [0, 2])
    (got,) = _run(stream, "ReduceSum", [_T(x345), axes], [_T(shape=(1, 4, 1), dtype="float32")],
                  _attr_handle(keep_dims=("bool", True)))
    np.testing.assert_allclose(got, x345.sum(axis=(0, 2), keepdims=True), rtol=1e-6)
    (got,) = _run(stream, "ReduceMeanD", [_T(x345)], [_T(shape=(3, 5), dtype="float32")],
                  _attr_handle(axes=("list_int", [1])))
    np.testing.assert_allclose(got, x345.mean(axis=1), rtol=1e-6)
    x34, r4 = RNG.standard_normal((3, 4)).astype(np.float32), RNG.standard_normal(4) \
        .astype(np.float32)
    (got,) = _run(stream, "Exp", [_T(x34)], [_T(shape=(3, 4), dtype="float32")])
    np.testing.assert_allclose(got, np.exp(x34), rtol=1e-6)
    h, ret = acl.op.create_handle("Maximum", [_T(x34).desc, _T(r4).desc],
                                  [_T(shape=(3, 4), dtype="float32").desc], 0)
    assert ret == 0
    xa, ra, out = _T(x34), _T(r4), _T(shape=(3, 4), dtype="float32")
    assert acl.op.execute_with_handle(h, [xa.buf, ra.buf], [out.buf], stream) == 0
    assert acl.rt.synchronize_stream(stream) == 0
    np.testing.assert_array_equal(out.get(), np.maximum(x34, r4))
    acl.op.destroy_handle(h)


def test_create_handle_refuses_what_was_not_compiled(stream):
    h, ret = acl.op.create_handle("Exp", [_T(shape=(2, 2), dtype="float32").desc],
                                  [_T(shape=(2, 2), dtype="float32").desc], 0)
    assert (h, ret) == (0, acl.ACL_ERROR_OP_NOT_FOUND)
    assert "acl.op.create_handle: op Exp(float32[2, 2] ND) -> (float32[2, 2] ND) must be " \
           "compiled into the model dir" in acl.get_recent_err_msg()


def test_data_type_size_and_set_tensor_const_refusals(stream):
    assert acl.data_type_size(acl.ACL_FLOAT16) == 2 == acl.get_data_type_size(acl.ACL_FLOAT16)
    assert acl.data_type_size(acl.ACL_INT64) == 8 and acl.data_type_size(999) == 0
    t = _T(shape=(3,), dtype=np.int32)
    v = np.arange(3, dtype=np.int32)
    assert acl.set_tensor_const(t.desc, acl.util.numpy_to_ptr(v), 8) == \
        acl.ACL_ERROR_INVALID_PARAM
    assert "acl.set_tensor_const: length must be the desc's size 12 (int32[3]), got length=8" \
        in acl.get_recent_err_msg()


@pytest.mark.parametrize("entry,match", [
    ({"op": "Slice", "input_desc": [_d((5, 7)), _d((2,), "int32", [4, 0]),
                                    _d((2,), "int32", [3, 2])], "output_desc": [_d((3, 2))]},
     r"Slice: offsets\[0\] \+ size\[0\] must lie in \[0, 5\]"),
    ({"op": "Cast", "input_desc": [_d((2,))], "output_desc": [_d((2,), "float16")],
      "attr": [_attr("dst_type", "int", 77)]}, r"Cast: dst_type must be one of the ACL data"),
    ({"op": "Transpose", "input_desc": [_d((2, 3)), _d((2,), "int32", [0, 0])],
      "output_desc": [_d((2, 3))]}, r"Transpose: perm must be a permutation of range\(2\)"),
    ({"op": "ArgMaxV2", "input_desc": [_d((2, 3)), _d((1,), "int32", ["a"])],
      "output_desc": [_d((2,), "int32")]}, r"input_desc\[1\] const_value must hold 1 int32"),
    ({"op": "ReduceSum", "input_desc": [_d((2, 3)), _d((1,), "int32", [1])],
      "output_desc": [_d((2, 3))]}, r"ReduceSum: output_desc\[0\] must be float32\[2\]"),
])
def test_singleop_compile_refusals(tmp_path, capsys, entry, match):
    (tmp_path / "ops.json").write_text(json.dumps([entry]))
    assert atc_main(["--singleop", str(tmp_path / "ops.json"), "--output", str(tmp_path / "o"),
                     "--soc_version", "Ascend910B2"]) == 1
    import re
    assert re.search(match, capsys.readouterr().err)
