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
from ..model.onnx_types import NUMPY_TO_ACL
from . import constants as C
from . import rt as _acl_rt
from .handles import HandleTable, fail

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
    """What a model desc shows: for a dynamic-batch model the largest batch's tensors (buffers
    are sized for it, as in CANN) and, last among the inputs, ACL_DYNAMIC_TENSOR_NAME."""
    if not model.dynamic_batch_sizes:
        return model.outputs if outputs else model.inputs
    ins, outs = model._bound[model.dynamic_batch_sizes[-1]][:2]
    if outputs:
        return outs
    return list(ins) + [TensorDesc(len(ins), ACL_DYNAMIC_TENSOR_NAME, (1,), "int64")]


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
        if isinstance(model, int):
            from .util import ptr_to_bytes
            data = ptr_to_bytes(model, model_size)
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
    """`(dims, ret)`; dims = {"name", "dimCount", "dims"} as pyACL returns aclmdlIODims."""
    return _val({}, lambda: _dims(_io(model_desc, index, False, "get_input_dims")))


def get_output_dims(model_desc: int, index: int):
    return _val({}, lambda: _dims(_io(model_desc, index, True, "get_output_dims")))


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


def set_dynamic_batch_size(model_id: int, dataset: int, index: int, batch_size: int) -> int:
    """Mirrors `aclmdlSetDynamicBatchSize`: the next execution of the model runs the graph
    converted for `batch_size` (one of ATC's --dynamic_batch_size); `index` is the input index
    of ACL_DYNAMIC_TENSOR_NAME (get_input_index_by_name)."""
    def run():
        m = _model(model_id, "set_dynamic_batch_size")
        _get(dataset, _Dataset, "mdl.set_dynamic_batch_size")
        if not m.dynamic_batch_sizes:
            raise AclError(ACL_ERROR_INVALID_PARAM, "acl.mdl.set_dynamic_batch_size: model_id "
                           "must be a model converted with --dynamic_batch_size, got a static "
                           "model")
        want = len(_descs(m, False)) - 1
        if index != want:
            raise AclError(ACL_ERROR_INVALID_PARAM, f"acl.mdl.set_dynamic_batch_size: index "
                           f"must be the index of {ACL_DYNAMIC_TENSOR_NAME!r} ({want}), got "
                           f"index={index!r}")
        try:
            m.set_dynamic_batch_size(batch_size)
        except AclError as e:
            raise AclError(e.code, f"acl.mdl.{e.message}") from None
    return _ret(run)


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
        _get(dataset, _Dataset, "mdl.destroy_dataset")
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


def get_dataset_buffer(dataset: int, index: int) -> int:
    def run():
        bufs = _get(dataset, _Dataset, "mdl.get_dataset_buffer").buffers
        return bufs[index] if isinstance(index, int) and 0 <= index < len(bufs) else 0
    return _plain(0, run)


# -- execution ------------------------------------------------------------------------------------
def _arrays(model: Model, dataset, outputs: bool, api: str) -> list:
    ds = _get(dataset, _Dataset, f"mdl.{api}")
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
        out.append(DeviceArray(d.shape, d.dtype, b.ptr))
    return out


def _execute(model_id, input_ds, output_ds, stream, api, sync):
    m = _model(model_id, api)
    ins = _arrays(m, input_ds, False, api)
    outs = _arrays(m, output_ds, True, api)
    s = _stream(stream, api)
    m.execute(ins, stream=s, outputs=outs)
    if sync:
        s.synchronize()


def execute(model_id: int, input_dataset: int, output_dataset: int) -> int:
    """Mirrors `aclmdlExecute` (synchronous, on the default stream)."""
    return _ret(_execute, model_id, input_dataset, output_dataset, 0, "execute", True)


def execute_async(model_id: int, input_dataset: int, output_dataset: int, stream: int) -> int:
    """Mirrors `aclmdlExecuteAsync`: every node is queued on `stream`; returns at once."""
    return _ret(_execute, model_id, input_dataset, output_dataset, stream, "execute_async",
                False)
