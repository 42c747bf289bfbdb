"""`acl.op`: single-op execution of the kernel library (pyACL names and return forms).

The flow of CANN's single-op samples: `python -m rt.atc --singleop ops.json --output dir` writes
one model file per op (rt/atc/singleop.py), `acl.op.set_model_dir(dir)` loads them, and
`acl.op.execute_v2(op_type, input_desc, inputs, output_desc, outputs, attr, stream)` finds the
model compiled for exactly that op type, those descs (dtype, shape, format) and those attribute
values, and queues it on `stream` (asynchronous, as in CANN). Anything not compiled is refused
with ACL_ERROR_OP_NOT_FOUND (100024) and a message listing what was compiled for the op type.

Where an op runs: the AI Core implementations registered in `rt.model.registry` (the kernels
of `kernels.model_ops`, the same bindings models use) when one accepts the op; every other case
(transposed MatMul, a broadcast the kernels do not cover, non-last-axis norms ...) runs the op's
numpy reference as an AI CPU task on the stream. LayerNorm's y runs on AI Core (kernels.norm);
its mean and variance outputs are one extra AI CPU task. The profiler shows the kernels as
"<op_type> (<kernel>)" and AI CPU tasks as "<op_type> (AI_CPU)".
"""
from __future__ import annotations

import glob
import os
import threading

import numpy as np

from .. import device as _dev
from .. import sched
from ..array import DeviceArray
from ..atc.singleop import (OPS, SingleOpError, const_of, full_attrs, is_model_file,
                             read_model)
from ..errors import (AclError, ACL_ERROR_INVALID_FILE, ACL_ERROR_INVALID_PARAM,
                      ACL_ERROR_INVALID_RESOURCE_HANDLE, ACL_ERROR_OP_NOT_FOUND,
                      ACL_ERROR_PARSE_MODEL)
from ..log import logger
from ..memory import record_arrays
from ..model import registry
from . import util as _util
from .handles import HandleTable, fail, name_calls, returns_ret
from .mdl import data_buffer_of
from .rt import stream_of
from .tensor import desc_of

_lock = threading.Lock()
_models: dict = {}          # op type -> [model dict] loaded by set_model_dir
_bound: dict = {}           # (model key, device) -> (engine, impl, state, node)
_attrs = HandleTable("op.", 0x5D0000001000, ACL_ERROR_INVALID_RESOURCE_HANDLE)


class _Attr(dict):
    """An aclopAttr: name -> (type, value)."""
    kind = "op attr"


class _OpLabels(sched.StreamHook):
    """Names the kernel tasks a single op launches "<op_type> (<kernel>)" (trace, op_summary)."""

    def __init__(self):
        self.local = threading.local()

    def submitted(self, core, task, accesses) -> None:
        op = getattr(self.local, "op", None)
        if op is not None and task.kind == "kernel":
            task.name = f"{op} ({task.name})"

    def device_reset(self, device_id: int) -> None:
        # prepared ops hold device buffers (zero pads) of that device: prepare again next time
        with _lock:
            for key in [k for k in _bound if k[1] == device_id]:
                del _bound[key]


_labels = sched.add_hook(_OpLabels())


# -- model dir -----------------------------------------------------------------------------------
@returns_ret
def set_model_dir(model_dir: str):
    """Mirrors `aclopSetModelDir`: load every single-op model (*.json written by
    `python -m rt.atc --singleop`) in `model_dir` and two directory levels below it. A file
    that does not parse is refused with ACL_ERROR_PARSE_MODEL and nothing of it is loaded."""
    if not isinstance(model_dir, (str, os.PathLike)) or not os.path.isdir(model_dir):
        raise AclError(ACL_ERROR_INVALID_FILE, f"acl.op.set_model_dir: model_dir must be an "
                       f"existing directory, got model_dir={model_dir!r}")
    loaded = []
    for path in _model_files(os.fspath(model_dir)):
        if not is_model_file(path):     # op_list.json, configs ...: not op models, skipped
            logger.debug("acl.op.set_model_dir: %s is not a single-op model; skipped", path)
            continue
        try:
            loaded.append(read_model(path))
        except SingleOpError as e:
            raise AclError(ACL_ERROR_PARSE_MODEL, f"acl.op.set_model_dir: {e}") from None
    if not loaded:
        logger.warning("acl.op.set_model_dir: %s holds no single-op model (*.json written by "
                       "python -m rt.atc --singleop)", model_dir)
    with _lock:
        for m in loaded:
            same = [x for x in _models.get(m["op"], []) if _key(x) != _key(m)]
            _models[m["op"]] = same + [m]


def _model_files(root: str) -> list:
    """*.json in `root` and in subdirectories at most two levels below it (CANN reads three
    directory levels: dir1, dir1/dir2, dir1/dir2/dir3)."""
    paths = []
    for folder, subdirs, _files in os.walk(root):
        depth = 0 if folder == root else os.path.relpath(folder, root).count(os.sep) + 1
        if depth >= 2:
            subdirs[:] = []
        paths += sorted(glob.glob(os.path.join(folder, "*.json")))
    return paths


def _key(m: dict) -> str:
    return repr((m["op"], [(d["type"], d["shape"], d["format"], d.get("const_value"))
                           for d in m["inputs"]],
                 [(d["type"], d["shape"], d["format"]) for d in m["outputs"]],
                 sorted(m["attrs"].items())))


# -- attributes ----------------------------------------------------------------------------------
def create_attr() -> int:
    """Mirrors `aclopCreateAttr`: an empty attribute set's handle."""
    return _attrs.new(_Attr())


def destroy_attr(attr: int) -> None:
    """Mirrors `aclopDestroyAttr` (no return value in pyACL)."""
    try:
        _attrs.get(attr, _Attr, "destroy_attr")
        _attrs.drop(attr)
    except AclError as e:
        fail(e, "acl.op.destroy_attr")


def _setter(typ: str):
    base = typ[5:] if typ.startswith("list_") else typ
    kinds = {"bool": (bool, np.bool_), "int": (int, np.integer),
             "float": (int, float, np.integer, np.floating), "string": (str,)}[base]

    def setter(attr: int, attr_name: str, attr_value):
        api = f"acl.op.set_attr_{typ}"
        a = _attrs.get(attr, _Attr, f"set_attr_{typ}")
        if not isinstance(attr_name, str) or not attr_name:
            raise AclError(ACL_ERROR_INVALID_PARAM, f"{api}: attr_name must be a non-empty str, "
                           f"got attr_name={attr_name!r}")
        values = list(attr_value) if typ.startswith("list_") and \
            isinstance(attr_value, (list, tuple, np.ndarray)) else [attr_value]
        if typ.startswith("list_") and not isinstance(attr_value, (list, tuple, np.ndarray)) or \
                not all(isinstance(v, kinds) and (base == "bool" or not isinstance(v, bool))
                        for v in values):
            raise AclError(ACL_ERROR_INVALID_PARAM, f"{api}: attr_value must be "
                           f"{'a list of ' if typ.startswith('list_') else 'a '}{base} value"
                           f"{'s' if typ.startswith('list_') else ''}, got "
                           f"attr_value={attr_value!r}")
        conv = {"bool": bool, "int": int, "float": float, "string": str}[base]
        a[attr_name] = (typ, [conv(v) for v in values] if typ.startswith("list_")
                        else conv(values[0]))
    setter.__name__ = f"set_attr_{typ}"
    setter.__doc__ = f"Mirrors `aclopSetAttr...`: `ret = acl.op.set_attr_{typ}(attr, name, value)`"
    return returns_ret(setter)


set_attr_bool, set_attr_int = _setter("bool"), _setter("int")
set_attr_float, set_attr_string = _setter("float"), _setter("string")
set_attr_list_bool, set_attr_list_int = _setter("list_bool"), _setter("list_int")
set_attr_list_float, set_attr_list_string = _setter("list_float"), _setter("list_string")


# -- execution -----------------------------------------------------------------------------------
def _sig(descs) -> str:
    return ", ".join(f"{d['type']}{list(d['shape'])} {d['format']}" for d in descs)


def _describe(m: dict) -> str:
    attrs = ", ".join(f"{k}={v!r}" for k, v in m["attrs"].items())
    return f"{m['op']}({_sig(m['inputs'])}) -> ({_sig(m['outputs'])})" + \
        (f" [{attrs}]" if attrs else "")


def _find(op_type, ins, outs, attr_handle, api) -> dict:
    if not isinstance(op_type, str) or op_type not in OPS:
        raise AclError(ACL_ERROR_OP_NOT_FOUND, f"{api}: op_type must be one of the single ops "
                       f"{sorted(OPS)}, got op_type={op_type!r}")
    given = {} if attr_handle in (None, 0) else dict(_attrs.get(attr_handle, _Attr,
                                                                 api[len('acl.op.'):]))
    try:
        attrs = full_attrs(op_type, given)
    except SingleOpError as e:
        raise AclError(ACL_ERROR_OP_NOT_FOUND, f"{api}: {e}") from None
    want = {"op": op_type, "inputs": ins, "outputs": outs, "attrs": attrs}
    with _lock:
        candidates = list(_models.get(op_type, []))
        loaded = bool(_models)
    for m in candidates:
        if _key(m) == _key(want):
            return m
    if not loaded:
        raise AclError(ACL_ERROR_OP_NOT_FOUND, f"{api}: no single-op model is loaded; call "
                       f"acl.op.set_model_dir(dir) with a directory written by python -m rt.atc "
                       f"--singleop (looking for {_describe(want)})")
    have = "; ".join(_describe(m) for m in candidates) or "none"
    raise AclError(ACL_ERROR_OP_NOT_FOUND, f"{api}: op {_describe(want)} must be compiled into "
                   f"the model dir (python -m rt.atc --singleop); compiled for {op_type}: {have}")


def _descs(desc_list, buffers, api: str, what: str):
    if not isinstance(desc_list, (list, tuple)) or not isinstance(buffers, (list, tuple)) or \
            len(desc_list) != len(buffers):
        raise AclError(ACL_ERROR_INVALID_PARAM, f"{api}: {what}_desc and {what}s must be lists of "
                       f"the same length, got {desc_list!r} and {buffers!r}")
    descs, arrays = [], []
    for i, (h, b) in enumerate(zip(desc_list, buffers)):
        d = desc_of(h, api[len("acl."):])
        if any(x < 0 for x in d.dims):
            raise AclError(ACL_ERROR_INVALID_PARAM, f"{api}: {what}_desc[{i}] must have known "
                           f"dims (single ops are static), got dims={list(d.dims)}")
        ptr, size = data_buffer_of(b, api[len("acl."):])
        if size < d.size and not (d.const is not None and size == 0):
            raise AclError(ACL_ERROR_INVALID_PARAM, f"{api}: {what}s[{i}] must hold {d.size} "
                           f"bytes ({d.dtype}{list(d.dims)}), got size={size}")
        desc = {"type": d.dtype, "format": d.format_name, "shape": list(d.dims)}
        if d.const is not None:                 # acl.set_tensor_const
            desc["const_value"] = d.const.reshape(-1).tolist()
        descs.append(desc)
        arrays.append(None if d.const is not None and size == 0 else
                      _util.board_array(d.dims, d.dtype, d.size, ptr, what == "output", api)
                      if _util.on_board(ptr) else DeviceArray(d.dims, d.dtype, ptr))
    return descs, arrays


def _device_plan(m: dict):
    """(device op, device attrs, how many leading outputs it writes) for the AI Core registry,
    or None when only the numpy reference covers the op's attributes."""
    op, a = m["op"], m["attrs"]
    if op in ("Add", "Sub", "Mul", "Relu"):
        return op, {}, 1
    if op in ("MatMul", "MatMulV2"):
        if a["transpose_x1"] or a["transpose_x2"]:
            return None
        return ("Gemm" if len(m["inputs"]) == 3 else "MatMul"), {}, 1
    if op in ("Softmax", "SoftmaxV2"):
        return ("Softmax", {"axis": a["axes"][0]}, 1) if len(a["axes"]) == 1 else None
    if op == "LayerNorm":
        rank = len(m["inputs"][0]["shape"])
        if rank and a["begin_norm_axis"] % rank == rank - 1 and \
                a["begin_params_axis"] % rank == rank - 1:
            return "LayerNormalization", {"axis": -1, "epsilon": a["epsilon"]}, 1
    return None


def _bind(m: dict):
    """(engine, impl, state, node) of a compiled op on the current device (prepared once)."""
    key = (_key(m), _dev.current_device())
    with _lock:
        got = _bound.get(key)
    if got is not None:
        return got
    plan = None if os.environ.get("ASCEND_EMU_MODEL_AICPU_ONLY") == "1" else _device_plan(m)
    bound = ("AI_CPU", None, None, None)
    if plan is not None:
        registry.load_op_libraries()
        dev_op, dev_attrs, n_out = plan
        impl = registry.AICORE.get(dev_op)
        node = {"name": m["op"], "op": dev_op, "attrs": dev_attrs,
                "inputs": [f"x{i}" for i in range(len(m["inputs"]))],
                "outputs": [f"y{i}" for i in range(n_out)]}
        specs = registry.Specs([(tuple(d["shape"]), d["type"]) for d in m["inputs"]],
                               [(tuple(d["shape"]), d["type"]) for d in m["outputs"][:n_out]])
        try:
            if impl is not None and impl.supports(node, specs):
                bound = ("AI_CORE", impl, impl.prepare(node, specs), node)
        except Exception as e:      # an op library bug must not stop the op: run on AI CPU
            logger.warning("acl.op: AI Core %s for %s failed to prepare (%s: %s); it runs on the "
                           "AI CPU", dev_op, m["op"], type(e).__name__, e)
    with _lock:
        _bound[key] = bound
    return bound


def _aicpu_task(m: dict, ins, outs, first: int, stream, label: str) -> None:
    """Queue the op's numpy reference on `stream`, writing outputs[first:]."""
    ref = OPS[m["op"]].reference

    consts = [const_of(d) for d in m["inputs"]]

    def run():
        results = ref(m["attrs"], *[a.host_view() if c is None else c
                                    for a, c in zip(ins, consts)])
        for dst, val in list(zip(outs, results))[first:]:
            dst.host_view()[...] = np.asarray(val).astype(dst.dtype, copy=False).reshape(dst.shape)
    record_arrays(list(ins) + list(outs), stream.enqueue(run, "aicpu", label))


@returns_ret
def execute_v2(op_type: str, input_desc, inputs, output_desc, outputs, attr, stream):
    """Mirrors `aclopExecuteV2`: queue the op compiled for these descs and attrs on `stream`
    (asynchronous: synchronize the stream before reading the outputs)."""
    api = "acl.op.execute_v2"
    _dev.ensure_device()
    s = stream_of(stream, "op.execute_v2")
    in_descs, ins = _descs(input_desc, inputs, api, "input")
    out_descs, outs = _descs(output_desc, outputs, api, "output")
    m = _find(op_type, in_descs, out_descs, attr, api)
    _run(m, ins, outs, s)


def _run(m: dict, ins, outs, s) -> None:
    _util.stage_in(list(ins) + list(outs), s, m["op"])      # ACL_DEVICE run mode only
    _launch(m, ins, outs, s)
    _util.stage_out(list(outs), s, m["op"])


def _launch(m: dict, ins, outs, s) -> None:
    op_type = m["op"]
    engine, impl, state, node = _bind(m)
    if engine == "AI_CORE":
        n_out = len(node["outputs"])
        _labels.local.op = op_type
        try:
            impl.launch(node, state, ins, outs[:n_out], None, s)
        finally:
            _labels.local.op = None
        if n_out < len(outs):
            _aicpu_task(m, ins, outs, n_out, s, f"{op_type} (AI_CPU statistics)")
        return
    _aicpu_task(m, ins, outs, 0, s, f"{op_type} (AI_CPU)")


execute = execute_v2        # aclopExecute: deprecated, same arguments


# -- handles (aclopCreateHandle / aclopExecWithHandle) ------------------------------------------
class _OpHandle:
    """An aclopHandle: the compiled op found for these descs, and the descs themselves."""
    kind = "op handle"

    def __init__(self, model: dict, in_handles: list, out_handles: list):
        self.model, self.in_handles, self.out_handles = model, in_handles, out_handles


_op_handles = HandleTable("op.handle.", 0x5D0000801000, ACL_ERROR_INVALID_RESOURCE_HANDLE)


def _probe_descs(handles, api: str, what: str) -> list:
    """The single-op descs of tensor desc handles (no buffers yet)."""
    if not isinstance(handles, (list, tuple)):
        raise AclError(ACL_ERROR_INVALID_PARAM, f"{api}: {what}_desc must be a list of tensor "
                       f"descs, got {handles!r}")
    out = []
    for h in handles:
        d = desc_of(h, api[len("acl."):])
        desc = {"type": d.dtype, "format": d.format_name, "shape": list(d.dims)}
        if d.const is not None:
            desc["const_value"] = d.const.reshape(-1).tolist()
        out.append(desc)
    return out


def create_handle(op_type: str, input_desc, output_desc, op_attr):
    """Mirrors `aclopCreateHandle`: `handle, ret`; the op must be compiled for these descs and
    attributes (as execute_v2 needs)."""
    api = "acl.op.create_handle"
    try:
        m = _find(op_type, _probe_descs(input_desc, api, "input"),
                  _probe_descs(output_desc, api, "output"), op_attr, api)
        return _op_handles.new(_OpHandle(m, list(input_desc), list(output_desc))), 0
    except AclError as e:
        return 0, fail(e, api)


def create_handle_for_cast(src_desc: int, dst_desc: int, truncate: int):
    """Mirrors `aclopCreateHandleForCast`: `handle, ret` for a Cast compiled from src_desc's
    type to dst_desc's (attribute dst_type)."""
    api = "acl.op.create_handle_for_cast"
    try:
        m = _find_cast(src_desc, dst_desc, api)
        return _op_handles.new(_OpHandle(m, [src_desc], [dst_desc])), 0
    except AclError as e:
        return 0, fail(e, api)


def _find_cast(src_desc, dst_desc, api) -> dict:
    attr = _attrs.new(_Attr(dst_type=("int", desc_of(dst_desc, api[len("acl."):]).data_type)))
    try:
        return _find("Cast", _probe_descs([src_desc], api, "src"),
                     _probe_descs([dst_desc], api, "dst"), attr, api)
    finally:
        _attrs.drop(attr)


@returns_ret
def execute_with_handle(handle: int, inputs, outputs, stream):
    """Mirrors `aclopExecWithHandle`: queue the handle's op on `stream` with these buffers."""
    api = "acl.op.execute_with_handle"
    _dev.ensure_device()
    h = _op_handles.get(handle, _OpHandle, "op.execute_with_handle")
    s = stream_of(stream, "op.execute_with_handle")
    _, ins = _descs(h.in_handles, inputs, api, "input")
    _, outs = _descs(h.out_handles, outputs, api, "output")
    _run(h.model, ins, outs, s)


def destroy_handle(handle: int) -> None:
    """Mirrors `aclopDestroyHandle` (no return value in pyACL)."""
    try:
        _op_handles.get(handle, _OpHandle, "op.destroy_handle")
        _op_handles.drop(handle)
    except AclError as e:
        fail(e, "acl.op.destroy_handle")


@returns_ret
def cast(src_desc: int, src_buffer, dst_desc: int, dst_buffer, truncate: int, stream):
    """Mirrors `aclopCast`: queue the Cast compiled from src_desc's type to dst_desc's."""
    api = "acl.op.cast"
    _dev.ensure_device()
    s = stream_of(stream, "op.cast")
    m = _find_cast(src_desc, dst_desc, api)
    _, ins = _descs([src_desc], [src_buffer], api, "input")
    _, outs = _descs([dst_desc], [dst_buffer], api, "output")
    _run(m, ins, outs, s)


def _reset_for_tests() -> None:
    """Forget the loaded model dirs and prepared ops (CANN has no unload; tests need one)."""
    with _lock:
        _models.clear()
        _bound.clear()


def engine_of(op_type: str, input_desc, output_desc, attr=0) -> str:
    """Not in pyACL: "AI_CORE" or "AI_CPU", where `execute_v2` runs this op (for tests, tools)."""
    api = "acl.op.engine_of"
    descs = [[{"type": d.dtype, "format": d.format_name, "shape": list(d.dims)}
              for d in (desc_of(h, "op.engine_of") for h in lst)]
             for lst in (input_desc, output_desc)]
    return _bind(_find(op_type, descs[0], descs[1], attr, api))[0]


name_calls(globals(), "acl.op")
__all__ = ["set_model_dir", "create_attr", "destroy_attr", "execute_v2", "execute", "engine_of",
           "create_handle", "create_handle_for_cast", "execute_with_handle", "destroy_handle",
           "cast",
           "set_attr_bool", "set_attr_int", "set_attr_float", "set_attr_string",
           "set_attr_list_bool", "set_attr_list_int", "set_attr_list_float",
           "set_attr_list_string"]
