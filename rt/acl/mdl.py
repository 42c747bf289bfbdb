"""`acl.mdl` (models) and the data-buffer functions of `acl` (pyACL names and return forms).

Handles (model ids, descs, datasets, data buffers) are ints. As in pyACL, functions return `ret`
or `(value, ret)`; getters that return a plain value in pyACL (`get_num_inputs`,
`get_input_size_by_index`, ...) return it directly (0 / "" on a bad handle).
"""
from __future__ import annotations

import itertools
import sys
import threading

from ..array import DeviceArray
from ..errors import (AclError, ACL_ERROR_INVALID_MODEL_ID, ACL_ERROR_INVALID_PARAM,
                      ACL_ERROR_INVALID_RESOURCE_HANDLE)
from ..model import Model, TensorDesc, query_size as _query_size
from ..model.dynamic import KIND_OPTIONS
from ..graph.onnx_types import NUMPY_TO_ACL
from . import constants as C
from . import rt as _acl_rt
from . import util as _util
from .handles import HandleTable, fail
from .tensor import create_tensor_desc, desc_of, destroy_tensor_desc

_lock = threading.Lock()
_models: dict = {}
_model_ids = itertools.count(1)
_handles = HandleTable("", 0x5B0000001000, ACL_ERROR_INVALID_RESOURCE_HANDLE)


class _Desc:
    def __init__(self):
        self.model: Model | None = None


class _Dataset:
    def __init__(self):
        self.buffers: list[int] = []
        self.descs: dict[int, int] = {}      # index -> tensor desc (set_dataset_tensor_desc)
        self.owned: set[int] = set()         # descs the runtime made (output shapes)


class _DataBuffer:
    def __init__(self, ptr: int, size: int):
        self.ptr, self.size = ptr, size


def _stream(handle, api: str):
    """The rt.Stream behind an acl.rt stream handle. acl.rt keeps its handle table private and
    exports no resolver yet; this reads its resolver until acl.rt exports one (see
    docs/models.md, "Not yet")."""
    return _acl_rt.stream_of(handle, api)


_new, _get = _handles.new, _handles.get

#: The extra input of a model converted with --dynamic_batch_size (CANN's
#: ACL_DYNAMIC_TENSOR_NAME); its index goes to set_dynamic_batch_size.
ACL_DYNAMIC_TENSOR_NAME = "ascend_mbatch_shape_data"


def _descs(model: Model, outputs: bool) -> list:
    """What a model desc shows: for a dynamic batch / gear model the largest batch's or gear's
    tensors (buffers are sized for it, as in CANN) and, last among the inputs,
    ACL_DYNAMIC_TENSOR_NAME; for a range model the graph at the upper bounds."""
    lst = model.declared_outputs if outputs else model.declared_inputs
    if outputs or model.dynamic_mode not in ("batch", "image_size", "dims"):
        return lst
    return list(lst) + [TensorDesc(len(lst), ACL_DYNAMIC_TENSOR_NAME, (1,), "int64")]


def _model(model_id, api: str) -> Model:
    m = _models.get(model_id) if isinstance(model_id, int) else None
    if m is None:
        raise AclError(ACL_ERROR_INVALID_MODEL_ID,
                       f"acl.mdl.{api}: model_id must be a loaded model, got {model_id!r}")
    return m


#: the data-buffer functions are top-level in pyACL (acl.create_data_buffer ...)
_TOP_LEVEL = {"create_data_buffer", "destroy_data_buffer", "get_data_buffer_addr",
              "get_data_buffer_size", "get_data_buffer_size_v2"}


def _api() -> str:
    """The acl.* name of the public function that called _ret/_val/_plain (two frames up)."""
    name = sys._getframe(2).f_code.co_name
    return f"acl.{name}" if name in _TOP_LEVEL else f"acl.mdl.{name}"


def _ret(fn, *args):
    try:
        fn(*args)
        return C.ACL_SUCCESS
    except AclError as e:
        return fail(e, _api())


def _val(default, fn, *args):
    try:
        return fn(*args), C.ACL_SUCCESS
    except AclError as e:
        return default, fail(e, _api())


def _register(model: Model) -> int:
    with _lock:
        mid = next(_model_ids)
        _models[mid] = model
    return mid


# -- load / unload -------------------------------------------------------------------------------
def load_from_file(model_path: str):
    """Mirrors `aclmdlLoadFromFile`: `(model_id, ret)`."""
    return _val(0, lambda: _register(Model.load(model_path)))


def load_from_mem(model, model_size: int | None = None):
    """Mirrors `aclmdlLoadFromMem`: `model` is bytes (or a host pointer with `model_size`)."""
    def load():
        data = model
        if isinstance(model, int) and not isinstance(model, bool):
            from .util import ptr_to_bytes
            data = ptr_to_bytes(model, model_size)
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise AclError(ACL_ERROR_INVALID_PARAM, f"load_from_mem: model must be bytes or a "
                           f"host pointer with model_size, got model={type(model).__name__}")
        return _register(Model.load(bytes(data)))
    return _val(0, load)


def unload(model_id: int) -> int:
    """Mirrors `aclmdlUnload`."""
    def run():
        m = _model(model_id, "unload")
        with _lock:
            _models.pop(model_id, None)
        m.unload()
    return _ret(run)


def query_size(model_path: str):
    """Mirrors `aclmdlQuerySize`: `(work_size, weight_size, ret)`."""
    try:
        w, s = _query_size(model_path)
        return w, s, C.ACL_SUCCESS
    except AclError as e:
        return 0, 0, fail(e, "acl.mdl.query_size")


# -- descriptions ---------------------------------------------------------------------------------
def create_desc() -> int:
    return _new(_Desc())


def get_desc(model_desc: int, model_id: int) -> int:
    def run():
        _get(model_desc, _Desc, "mdl.get_desc").model = _model(model_id, "get_desc")
    return _ret(run)


def destroy_desc(model_desc: int) -> int:
    def run():
        _get(model_desc, _Desc, "mdl.destroy_desc")
        _handles.drop(model_desc)
    return _ret(run)


def _io(model_desc, index, outputs: bool, api: str):
    d = _get(model_desc, _Desc, f"mdl.{api}")
    if d.model is None:
        raise AclError(ACL_ERROR_INVALID_PARAM, f"acl.mdl.{api}: model_desc must be filled by "
                       f"acl.mdl.get_desc first")
    lst = _descs(d.model, outputs)
    if not isinstance(index, int) or not 0 <= index < len(lst):
        raise AclError(ACL_ERROR_INVALID_PARAM, f"acl.mdl.{api}: index must be in "
                       f"[0, {len(lst)}), got index={index!r}")
    return lst[index]


def _count(model_desc, outputs: bool) -> int:
    d = _handles.peek(model_desc)
    if not isinstance(d, _Desc) or d.model is None:
        return 0
    return len(_descs(d.model, outputs))


def get_num_inputs(model_desc: int) -> int:
    return _count(model_desc, False)


def get_num_outputs(model_desc: int) -> int:
    return _count(model_desc, True)


def _plain(default, fn):
    try:
        return fn()
    except AclError as e:
        fail(e, _api())
        return default


def get_input_size_by_index(model_desc: int, index: int) -> int:
    return _plain(0, lambda: _io(model_desc, index, False, "get_input_size_by_index").size)


def get_output_size_by_index(model_desc: int, index: int) -> int:
    return _plain(0, lambda: _io(model_desc, index, True, "get_output_size_by_index").size)


def get_input_name_by_index(model_desc: int, index: int) -> str:
    return _plain("", lambda: _io(model_desc, index, False, "get_input_name_by_index").name)


def get_output_name_by_index(model_desc: int, index: int) -> str:
    return _plain("", lambda: _io(model_desc, index, True, "get_output_name_by_index").name)


def get_input_data_type(model_desc: int, index: int) -> int:
    return _plain(-1, lambda: NUMPY_TO_ACL.get(
        _io(model_desc, index, False, "get_input_data_type").dtype, -1))


def get_output_data_type(model_desc: int, index: int) -> int:
    return _plain(-1, lambda: NUMPY_TO_ACL.get(
        _io(model_desc, index, True, "get_output_data_type").dtype, -1))


def _dims(desc) -> dict:
    return {"name": desc.name, "dimCount": len(desc.shape), "dims": list(desc.shape)}


def get_input_dims(model_desc: int, index: int):
    """`(dims, ret)`; dims = {"name", "dimCount", "dims"} as pyACL returns aclmdlIODims. For a
    range model a dim whose range is not one value shows as -1 (as CANN shows dynamic dims)."""
    def run():
        d = _io(model_desc, index, False, "get_input_dims")
        dims = _dims(d)
        ranges = _handles.peek(model_desc).model.shape_ranges.get(d.name)
        if ranges:
            dims["dims"] = [x if lo == hi else -1 for x, (lo, hi) in zip(d.shape, ranges)]
        return dims
    return _val({}, run)


def get_output_dims(model_desc: int, index: int):
    """`(dims, ret)`; for a range model -1 marks the dims that follow the input ranges."""
    def run():
        d = _io(model_desc, index, True, "get_output_dims")
        dims = _dims(d)
        symbolic = _handles.peek(model_desc).model.output_dims.get(d.name)
        if symbolic:
            dims["dims"] = [-1 if s == -1 else x for x, s in zip(d.shape, symbolic)]
        return dims
    return _val({}, run)


def get_cur_output_dims(model_desc: int, index: int):
    """`(dims, ret)` of output `index` for the batch size set last (dynamic batch), else as
    get_output_dims."""
    def run():
        d = _io(model_desc, index, True, "get_cur_output_dims")
        return _dims(d.__class__(d.index, d.name, *_current(model_desc, d)))
    return _val({}, run)


def _current(model_desc, d):
    cur = _handles.peek(model_desc).model.outputs[d.index]
    return cur.shape, cur.dtype


def get_input_index_by_name(model_desc: int, name: str):
    def run():
        d = _get(model_desc, _Desc, "mdl.get_input_index_by_name")
        if d.model is None:
            raise AclError(ACL_ERROR_INVALID_PARAM, "acl.mdl.get_input_index_by_name: "
                           "model_desc must be filled by acl.mdl.get_desc first")
        for desc in _descs(d.model, False):
            if desc.name == name:
                return desc.index
        return d.model.input_index(name)        # raises with the valid names
    return _val(0, run)


def _gear_call(model_id, dataset, index, api: str, mode: str, select) -> None:
    """The checks of set_dynamic_batch_size / set_dynamic_hw_size / set_input_dynamic_dims,
    then `select(model)`: `index` must be the index of ACL_DYNAMIC_TENSOR_NAME."""
    m = _model(model_id, api)
    _get(dataset, _Dataset, f"mdl.{api}")
    if m.dynamic_mode != mode:
        raise AclError(ACL_ERROR_INVALID_PARAM, f"acl.mdl.{api}: model_id must be a model "
                       f"converted with {KIND_OPTIONS[mode]}, got "
                       f"{KIND_OPTIONS.get(m.dynamic_mode, 'a static model')}")
    want = len(_descs(m, False)) - 1
    if index != want:
        raise AclError(ACL_ERROR_INVALID_PARAM, f"acl.mdl.{api}: index must be the index of "
                       f"{ACL_DYNAMIC_TENSOR_NAME!r} ({want}), got index={index!r}")
    try:
        select(m)
    except AclError as e:
        raise AclError(e.code, f"acl.mdl.{e.message}") from None


def set_dynamic_batch_size(model_id: int, dataset: int, index: int, batch_size: int) -> int:
    """Mirrors `aclmdlSetDynamicBatchSize`: the next execution of the model runs the graph
    converted for `batch_size` (one of ATC's --dynamic_batch_size); `index` is the input index
    of ACL_DYNAMIC_TENSOR_NAME (get_input_index_by_name)."""
    return _ret(_gear_call, model_id, dataset, index, "set_dynamic_batch_size", "batch",
                lambda m: m.set_dynamic_batch_size(batch_size))


def set_dynamic_hw_size(model_id: int, dataset: int, index: int, height: int,
                        width: int) -> int:
    """Mirrors `aclmdlSetDynamicHWSize`: the next execution runs the (height, width) gear of
    ATC's --dynamic_image_size; `index` as for set_dynamic_batch_size."""
    return _ret(_gear_call, model_id, dataset, index, "set_dynamic_hw_size", "image_size",
                lambda m: m.set_dynamic_hw_size(height, width))


def set_input_dynamic_dims(model_id: int, dataset: int, index: int, dims) -> int:
    """Mirrors `aclmdlSetInputDynamicDims`: `dims` is an aclmdlIODims dict ({"name", "dimCount",
    "dims"}: every input's dims concatenated, one gear of get_input_dynamic_dims)."""
    def select(m):
        values = dims.get("dims") if isinstance(dims, dict) else dims
        if isinstance(dims, dict) and dims.get("dimCount", len(values or [])) != \
                len(values or []):
            raise AclError(ACL_ERROR_INVALID_PARAM, f"set_input_dynamic_dims: dimCount must be "
                           f"len(dims), got dimCount={dims.get('dimCount')!r}")
        m.set_input_dynamic_dims(values if values is not None else [])
    return _ret(_gear_call, model_id, dataset, index, "set_input_dynamic_dims", "dims", select)


def _desc_model(model_desc, api: str) -> Model:
    d = _get(model_desc, _Desc, f"mdl.{api}")
    if d.model is None:
        raise AclError(ACL_ERROR_INVALID_PARAM, f"acl.mdl.{api}: model_desc must be filled by "
                       f"acl.mdl.get_desc first")
    return d.model


def get_dynamic_batch(model_desc: int):
    """Mirrors `aclmdlGetDynamicBatch`: `({"batchCount", "batch"}, ret)` (count 0 when the
    model has no dynamic batch)."""
    def run():
        sizes = list(_desc_model(model_desc, "get_dynamic_batch").dynamic_batch_sizes)
        return {"batchCount": len(sizes), "batch": sizes}
    return _val({}, run)


def get_dynamic_hw(model_desc: int, index: int):
    """Mirrors `aclmdlGetDynamicHW`: `({"hwCount", "hw": [[h, w], ...]}, ret)` (count 0 without
    --dynamic_image_size; `index` is reserved, -1)."""
    def run():
        m = _desc_model(model_desc, "get_dynamic_hw")
        hw = [list(g) for g in m.dynamic_gears] if m.dynamic_mode == "image_size" else []
        return {"hwCount": len(hw), "hw": hw}
    return _val({}, run)


def get_input_dynamic_gear_count(model_desc: int, index: int):
    """Mirrors `aclmdlGetInputDynamicGearCount`: `(gear_count, ret)`; 0 without --dynamic_dims
    (`index` is reserved, -1)."""
    def run():
        m = _desc_model(model_desc, "get_input_dynamic_gear_count")
        return len(m.dynamic_gears) if m.dynamic_mode == "dims" else 0
    return _val(0, run)


def get_input_dynamic_dims(model_desc: int, index: int, gear_count: int):
    """Mirrors `aclmdlGetInputDynamicDims`: `(dims_list, ret)`, one aclmdlIODims dict per gear
    ({"name": "", "dimCount", "dims"}: every input's dims at that gear, concatenated)."""
    def run():
        m = _desc_model(model_desc, "get_input_dynamic_dims")
        count = len(m.dynamic_gears) if m.dynamic_mode == "dims" else 0
        if gear_count != count:
            raise AclError(ACL_ERROR_INVALID_PARAM, f"acl.mdl.get_input_dynamic_dims: "
                           f"gear_count must be get_input_dynamic_gear_count's {count}, got "
                           f"gear_count={gear_count!r}")
        out = []
        for g in range(count):
            dims = m.dynamic_dims_of(g)
            out.append({"name": "", "dimCount": len(dims), "dims": dims})
        return out
    return _val([], run)


# -- data buffers and datasets --------------------------------------------------------------------
def create_data_buffer(data: int, size: int) -> int:
    """Mirrors `aclCreateDataBuffer(data, size)` (a device pointer and its size in bytes)."""
    return _new(_DataBuffer(int(data), int(size)))


def destroy_data_buffer(data_buffer: int) -> int:
    def run():
        _get(data_buffer, _DataBuffer, "destroy_data_buffer")
        _handles.drop(data_buffer)
    return _ret(run)


def get_data_buffer_addr(data_buffer: int) -> int:
    return _plain(0, lambda: _get(data_buffer, _DataBuffer, "get_data_buffer_addr").ptr)


def get_data_buffer_size(data_buffer: int) -> int:
    return _plain(0, lambda: _get(data_buffer, _DataBuffer, "get_data_buffer_size").size)


get_data_buffer_size_v2 = get_data_buffer_size


def data_buffer_of(data_buffer, api: str) -> tuple[int, int]:
    """(device pointer, size) of a live data buffer handle, else AclError naming `api` (acl.op
    takes the same buffers)."""
    b = _get(data_buffer, _DataBuffer, api, "data buffer")
    return b.ptr, b.size


def create_dataset() -> int:
    return _new(_Dataset())


def destroy_dataset(dataset: int) -> int:
    def run():
        ds = _get(dataset, _Dataset, "mdl.destroy_dataset")
        for h in ds.owned:
            destroy_tensor_desc(h)
        _handles.drop(dataset)
    return _ret(run)


def add_dataset_buffer(dataset: int, data_buffer: int):
    """Mirrors `aclmdlAddDatasetBuffer`: `(dataset, ret)` as pyACL samples unpack it."""
    def run():
        ds = _get(dataset, _Dataset, "mdl.add_dataset_buffer")
        _get(data_buffer, _DataBuffer, "mdl.add_dataset_buffer")
        ds.buffers.append(data_buffer)
        return dataset
    return _val(dataset, run)


def get_dataset_num_buffers(dataset: int) -> int:
    return _plain(0, lambda: len(_get(dataset, _Dataset, "mdl.get_dataset_num_buffers").buffers))


def set_dataset_tensor_desc(dataset: int, tensor_desc: int, index: int) -> int:
    """Mirrors `aclmdlSetDatasetTensorDesc`: the actual shape of input `index` for a model
    converted with --input_shape ranges (the desc stays the caller's to destroy)."""
    def run():
        ds = _get(dataset, _Dataset, "mdl.set_dataset_tensor_desc")
        desc_of(tensor_desc, "mdl.set_dataset_tensor_desc")
        if not isinstance(index, int) or index < 0:
            raise AclError(ACL_ERROR_INVALID_PARAM, f"acl.mdl.set_dataset_tensor_desc: index "
                           f"must be an int >= 0, got index={index!r}")
        _set_desc(ds, index, tensor_desc, owned=False)
    return _ret(run)


def _set_desc(ds: _Dataset, index: int, handle: int, owned: bool) -> None:
    old = ds.descs.get(index)
    if old in ds.owned:
        ds.owned.discard(old)
        destroy_tensor_desc(old)
    ds.descs[index] = handle
    if owned:
        ds.owned.add(handle)


def get_dataset_tensor_desc(dataset: int, index: int) -> int:
    """Mirrors `aclmdlGetDatasetTensorDesc`: the tensor desc at `index` (0 if none); after an
    execution of a range model the output dataset holds each output's actual shape."""
    return _plain(0, lambda: _get(dataset, _Dataset, "mdl.get_dataset_tensor_desc")
                  .descs.get(index, 0))


def get_dataset_buffer(dataset: int, index: int) -> int:
    def run():
        bufs = _get(dataset, _Dataset, "mdl.get_dataset_buffer").buffers
        return bufs[index] if isinstance(index, int) and 0 <= index < len(bufs) else 0
    return _plain(0, run)


# -- execution ------------------------------------------------------------------------------------
def _arrays(model: Model, dataset, outputs: bool, api: str, descs=None) -> list:
    ds = _get(dataset, _Dataset, f"mdl.{api}")
    if descs is None:
        descs = model.outputs if outputs else model.inputs
    want = len(_descs(model, outputs))      # + the dynamic-batch input, not passed on
    if len(ds.buffers) != want:
        raise AclError(ACL_ERROR_INVALID_PARAM,
                       f"acl.mdl.{api}: the {'output' if outputs else 'input'} dataset must "
                       f"hold {want} buffers, got {len(ds.buffers)}")
    out = []
    for d, h in zip(descs, ds.buffers):
        b = _get(h, _DataBuffer, f"mdl.{api}")
        if b.size < d.size:
            raise AclError(ACL_ERROR_INVALID_PARAM,
                           f"acl.mdl.{api}: buffer for {'output' if outputs else 'input'} "
                           f"{d.index} ({d.name!r}) must hold {d.size} bytes, got size={b.size}")
        on_board = _util.on_board(b.ptr)        # ACL_DEVICE run mode: host memory goes in
        out.append(_util.board_array(d.shape, d.dtype, d.size, b.ptr, outputs, f"acl.mdl.{api}")
                   if on_board else DeviceArray(d.shape, d.dtype, b.ptr))
    return out


def _range_input_shapes(m: Model, dataset, api: str) -> list:
    """A range model's input shapes: each input's dataset tensor desc, or its declared shape
    when all its ranges are one value."""
    ds = _get(dataset, _Dataset, f"mdl.{api}")
    shapes = []
    for d in m.declared_inputs:
        handle = ds.descs.get(d.index)
        if handle:
            shapes.append(desc_of(handle, f"mdl.{api}").dims)
        elif all(lo == hi for lo, hi in m.shape_ranges.get(d.name, [])):
            shapes.append(d.shape)
        else:
            raise AclError(ACL_ERROR_INVALID_PARAM, f"acl.mdl.{api}: input {d.index} "
                           f"({d.name!r}) has a dynamic shape; give its actual shape with "
                           f"acl.mdl.set_dataset_tensor_desc(dataset, tensor_desc, {d.index})")
    return shapes


def _execute(model_id, input_ds, output_ds, stream, api, sync):
    m = _model(model_id, api)
    target = m
    if m.dynamic_mode == "shape":     # the graph for the shapes the input descs give
        target = m.specialised(_range_input_shapes(m, input_ds, api), f"acl.mdl.{api}")
    ins = _arrays(m, input_ds, False, api, target.inputs)
    outs = _arrays(m, output_ds, True, api, target.outputs)
    s = _stream(stream, api)
    _util.stage_in(ins + outs, s, "model execute")           # ACL_DEVICE run mode only
    m.execute(ins, stream=s, outputs=outs)
    _util.stage_out(outs, s, "model execute")
    if m.dynamic_mode == "shape":     # each output's actual shape, for get_dataset_tensor_desc
        ds = _get(output_ds, _Dataset, f"mdl.{api}")
        for d in target.outputs:
            _set_desc(ds, d.index, create_tensor_desc(NUMPY_TO_ACL[d.dtype], list(d.shape),
                                                      C.ACL_FORMAT_ND), owned=True)
    if sync:
        s.synchronize()


def execute(model_id: int, input_dataset: int, output_dataset: int) -> int:
    """Mirrors `aclmdlExecute` (synchronous, on the default stream)."""
    return _ret(_execute, model_id, input_dataset, output_dataset, 0, "execute", True)


def execute_async(model_id: int, input_dataset: int, output_dataset: int, stream: int) -> int:
    """Mirrors `aclmdlExecuteAsync`: every node is queued on `stream`; returns at once."""
    return _ret(_execute, model_id, input_dataset, output_dataset, stream, "execute_async",
                False)
