"""`rt.Model`: an offline model loaded onto a device (mirrors aclmdlLoadFromFile/aclmdlExecute).

At load the weights go to one device allocation and the activations get one workspace
allocation, laid out by the static memory plan that ATC wrote (tensors whose lifetimes do not
overlap share bytes). Each node becomes tasks on the execution stream: AI Core nodes launch
kernels of a registered op library (`rt.model.registry`), every other node is an AI CPU task
(numpy on the stream's worker, kind "aicpu" in the profiler).
"""
from __future__ import annotations

import math
import os
import threading
from dataclasses import dataclass

import numpy as np

from .. import device as _dev
from ..array import DeviceArray, device_empty
from ..errors import (AclError, ACL_ERROR_DESERIALIZE_MODEL, ACL_ERROR_INVALID_PARAM,
                      ACL_ERROR_MODEL_INPUT_NOT_MATCH, ACL_ERROR_MODEL_OUTPUT_NOT_MATCH,
                      ACL_ERROR_OP_NOT_FOUND, ACL_ERROR_PARSE_MODEL, ACL_ERROR_RT_MODEL_EXECUTE)
from .. import sched
from ..log import logger
from ..memory import record_arrays
from ..stream import Stream, current_stream
from ..graph import aicpu
from . import fusion, registry
from .dynamic import DynamicShapes
from ..graph.format import parse, read_file


@dataclass(frozen=True)
class TensorDesc:
    """One model input or output: name, shape, numpy dtype name and size in bytes."""
    index: int
    name: str
    shape: tuple
    dtype: str

    @property
    def size(self) -> int:
        return math.prod(self.shape) * np.dtype(self.dtype).itemsize


@dataclass
class _Node:
    name: str
    op: str
    attrs: dict
    inputs: list
    outputs: list
    engine: str
    impl: object
    state: object
    workspace: DeviceArray | None
    raw: dict             # the node as in the file (what op implementations see)
    fused: tuple = ()     # names of the nodes this one runs (load-time fusion, rt/model/fusion.py)


class _NodeLabels(sched.StreamHook):
    """Names the kernel tasks an AI Core node launches after the node: "conv1 (img2col_kernel)"
    (what the trace and op_summary show; the launching thread says which node is current)."""

    def __init__(self):
        self.local = threading.local()

    def submitted(self, core, task, accesses) -> None:
        node = getattr(self.local, "node", None)
        if node is not None and task.kind == "kernel":
            task.name = f"{node} ({task.name})"


_labels = sched.add_hook(_NodeLabels())


def query_size(path) -> tuple[int, int]:
    """Mirrors `aclmdlQuerySize`: (workspace bytes, weight bytes) of a model file."""
    header, _ = parse(read_file(path), str(path))
    return header["workspace_bytes"], header["weight_bytes"]


class Model:
    """A loaded offline model. `Model.load(path_or_bytes)`; `.inputs`/`.outputs` (TensorDesc);
    `.execute(inputs, stream=None)`; `.unload()`. Gears and shape ranges are handled by its
    `DynamicShapes` (rt/model/dynamic.py), to which the calls below delegate."""

    def __init__(self, header: dict, blob: memoryview, device: int | None = None,
                 source: str = "<memory>"):
        self.source = source
        self.header = header
        _dev.ensure_device()
        self.device = _dev.current_device() if device is None else device
        built_for, runs_on = header.get("soc_version"), _dev.get_device(self.device).soc.name
        if built_for is not None and built_for != runs_on:
            raise AclError(ACL_ERROR_PARSE_MODEL, f"load model {source}: soc_version must be the "
                           f"device's {runs_on!r} (convert again with atc --soc_version="
                           f"{runs_on}), got soc_version={built_for!r}")
        tensors = header["tensors"]
        self.inputs = [TensorDesc(i, n, tuple(tensors[n]["shape"]), tensors[n]["dtype"])
                       for i, n in enumerate(header["inputs"])]
        self.outputs = [TensorDesc(i, n, tuple(tensors[n]["shape"]), tensors[n]["dtype"])
                        for i, n in enumerate(header["outputs"])]
        self.workspace_bytes = header["workspace_bytes"]
        self.weight_bytes = header["weight_bytes"]
        dyn = header.get("dynamic_batch") or {}
        self._graphs = {int(b): v for b, v in dyn.get("variants", {}).items()}
        self.dynamic_batch_sizes = list(dyn.get("sizes", []))
        if self.dynamic_batch_sizes:
            self._graphs[self.dynamic_batch_sizes[-1]] = header
        unknown = sorted({n["op"] for g in [header, *self._graphs.values()] for n in g["nodes"]}
                         - set(aicpu.OPS))
        if unknown:
            raise AclError(ACL_ERROR_OP_NOT_FOUND,
                           f"load model {source}: op type(s) {unknown} have no implementation in "
                           f"this runtime (AI Core or AI CPU)")
        registry.load_op_libraries()
        self._lock = threading.Lock()
        # device memory: weights (copied once) and the activation workspace
        self._weights = device_empty((max(self.weight_bytes, 1),), np.uint8, device=self.device)
        if len(blob):
            self._weights.host_view()[:len(blob)] = np.frombuffer(blob, np.uint8)
        self._work = device_empty((max(self.workspace_bytes, 1),), np.uint8, device=self.device)
        wtable = {w["name"]: w for w in header["weights"]}
        self._host_weights = {}
        self._views = {}
        for name, t in tensors.items():
            if t["kind"] == "weight":
                w = wtable[name]
                self._host_weights[name] = np.frombuffer(
                    blob, np.dtype(w["dtype"]).newbyteorder("<"), math.prod(w["shape"]),
                    w["offset"]).reshape(w["shape"])
                self._views[name] = self._view(self._weights, w["offset"], t)
            elif t["kind"] == "activation":
                self._views[name] = self._view(self._work, t["offset"], t)
        self._staging: dict = {}
        self.nodes = self._bind_all(header, tensors)
        self.batch_size = self.dynamic_batch_sizes[-1] if self.dynamic_batch_sizes else None
        self._bound = {self.batch_size: (self.inputs, self.outputs, self._views, self.nodes)}
        self._dynamic = DynamicShapes(self)

    def set_dynamic_batch_size(self, batch: int) -> None:
        """Mirrors `aclmdlSetDynamicBatchSize`: run the graph converted for `batch` (one of the
        sizes given to ATC's --dynamic_batch_size) from the next execute on; `.inputs` and
        `.outputs` then describe that batch."""
        if not self.dynamic_batch_sizes:
            raise AclError(ACL_ERROR_INVALID_PARAM, "set_dynamic_batch_size: the model must be "
                           "converted with --dynamic_batch_size, got a static model")
        if batch not in self._graphs:
            raise AclError(ACL_ERROR_INVALID_PARAM, f"set_dynamic_batch_size: batch must be one "
                           f"of {self.dynamic_batch_sizes}, got batch={batch!r}")
        with self._lock:
            if batch not in self._bound:
                self._bound[batch] = self._bind_variant(self._graphs[batch])
            self.inputs, self.outputs, self._views, self.nodes = self._bound[batch]
            self.batch_size = batch

    # -- dynamic gears and shapes (DynamicShapes) -----------------------------------------------
    @property
    def dynamic_mode(self) -> str | None:
        """"batch", "image_size", "dims", "shape" (ranges) or None (a static model)."""
        return self._dynamic.mode

    @property
    def dynamic_gears(self) -> list:
        return self._dynamic.gears

    @property
    def gear_shapes(self) -> list:
        return self._dynamic.gear_shapes

    @property
    def gear_input_shape(self) -> dict:
        return self._dynamic.gear_input_shape

    @property
    def gear(self) -> int | None:
        return self._dynamic.gear

    @property
    def shape_ranges(self) -> dict:
        return self._dynamic.shape_ranges

    @property
    def output_dims(self) -> dict:
        return self._dynamic.output_dims

    @property
    def declared_inputs(self) -> list:
        return self._dynamic.declared_inputs

    @property
    def declared_outputs(self) -> list:
        return self._dynamic.declared_outputs

    def set_dynamic_hw_size(self, height: int, width: int) -> None:
        """Mirrors `aclmdlSetDynamicHWSize`: run the graph converted for the (height, width)
        gear of ATC's --dynamic_image_size from the next execute on."""
        self._dynamic.set_hw_size(height, width)

    def set_input_dynamic_dims(self, dims) -> None:
        """Mirrors `aclmdlSetInputDynamicDims`: `dims` is every input's dims concatenated in
        input order (as get_input_dynamic_dims lists them) or just the values of the -1 dims
        (one gear of ATC's --dynamic_dims)."""
        self._dynamic.set_dims(dims)

    def dynamic_dims_of(self, gear: int) -> list[int]:
        """Every input's dims at `gear`, concatenated in input order (aclmdlIODims.dims of
        aclmdlGetInputDynamicDims / aclmdlSetInputDynamicDims)."""
        return self._dynamic.dims_of(gear)

    def check_shapes(self, shapes: list, api: str = "model execute") -> None:
        """Refuse input shapes outside the ranges given to ATC."""
        self._dynamic.check_shapes(shapes, api)

    def specialised(self, shapes: list, api: str = "model execute") -> "Model":
        """The model to run for these input shapes: this one for the main shapes, else a static
        model converted for them (cached, LRU of ASCEND_EMU_MODEL_SHAPE_CACHE)."""
        return self._dynamic.specialised(shapes, api)

    # -- construction --------------------------------------------------------------------------
    @staticmethod
    def _view(base: DeviceArray, offset: int, t: dict) -> DeviceArray | None:
        if math.prod(t["shape"]) == 0:
            return None
        return DeviceArray(tuple(t["shape"]), t["dtype"], int(base.ptr) + offset)

    @classmethod
    def load(cls, source, device: int | None = None) -> "Model":
        """Mirrors `aclmdlLoadFromFile` (a path) / `aclmdlLoadFromMem` (bytes). Refuses corrupt,
        truncated or wrong-version files with ACL's model error codes (see rt/graph/format.py)."""
        path = None
        if isinstance(source, (bytes, bytearray, memoryview)):
            header, blob = parse(source)
        else:
            path = os.fspath(source)
            header, blob = parse(read_file(path), path)
        try:
            return cls(header, blob, device, path) if path else cls(header, blob, device)
        except AclError:
            raise
        except (TypeError, ValueError, KeyError, IndexError, OverflowError, RecursionError,
                AttributeError, MemoryError) as e:     # a header that passed the schema but lies
            raise AclError(ACL_ERROR_DESERIALIZE_MODEL, f"load model {path or '<memory>'}: "
                           f"header must describe a loadable model, got {type(e).__name__}: "
                           f"{e}") from e

    def _spec(self, tensors, name):
        if not name:
            return None
        t = tensors[name]
        return (tuple(t["shape"]), t["dtype"])

    def _bind_variant(self, g: dict) -> tuple:
        """(inputs, outputs, views, nodes) of another graph in the file (a batch size or gear):
        the main graph's weight views, its own activations in the shared workspace."""
        t = g["tensors"]
        views = {k: v for k, v in self._views.items()
                 if self.header["tensors"][k]["kind"] == "weight"}
        for name, spec in t.items():
            if spec["kind"] == "activation":
                views[name] = self._view(self._work, spec["offset"], spec)
        ins = [TensorDesc(i, n, tuple(t[n]["shape"]), t[n]["dtype"])
               for i, n in enumerate(g["inputs"])]
        outs = [TensorDesc(i, n, tuple(t[n]["shape"]), t[n]["dtype"])
                for i, n in enumerate(g["outputs"])]
        return ins, outs, views, self._bind_all(g, t)

    def _bind_all(self, graph: dict, tensors: dict) -> list:
        """The graph's nodes bound in order; fusible chains (rt/model/fusion.py) become one node
        when the AI Core implementation accepts the fused node (set ASCEND_EMU_MODEL_NO_FUSION=1
        to keep every node separate)."""
        if os.environ.get("ASCEND_EMU_MODEL_NO_FUSION") == "1":
            return [self._bind(n, tensors) for n in graph["nodes"]]
        bound = []
        for n, originals in fusion.plan(graph["nodes"], tensors, graph["outputs"]):
            if originals:
                node = self._bind(n, tensors)
                if node.engine == "AI_CORE":
                    node.fused = tuple(n["fusion"]["nodes"])
                    bound.append(node)
                    continue
                bound.extend(self._bind(o, tensors) for o in originals)
            else:
                bound.append(self._bind(n, tensors))
        return bound

    def _bind(self, n: dict, tensors: dict) -> _Node:
        specs = registry.Specs([self._spec(tensors, i) for i in n["inputs"]],
                               [self._spec(tensors, o) for o in n["outputs"]],
                               {k: self._host_weights[name] for k, name in enumerate(n["inputs"])
                                if name in self._host_weights},
                               n.get("workspace_bytes", 0))
        ws = None
        if n.get("workspace_bytes", 0):
            ws = DeviceArray((n["workspace_bytes"],), np.uint8,
                             int(self._work.ptr) + n["workspace_offset"])
        impl = registry.AICORE.get(n["op"])
        engine, state = "AI_CPU", None
        if impl is not None and os.environ.get("ASCEND_EMU_MODEL_AICPU_ONLY") != "1":
            try:
                if impl.supports(n, specs):
                    state = impl.prepare(n, specs)
                    engine = "AI_CORE"
            except Exception as e:    # an op library bug must not stop the model: run on AI CPU
                logger.warning("model: AI Core %s for node %s failed to prepare (%s: %s); it "
                               "runs on the AI CPU", n["op"], n["name"], type(e).__name__, e)
                engine, state = "AI_CPU", None
        return _Node(n["name"], n["op"], n["attrs"], n["inputs"], n["outputs"], engine,
                     impl if engine == "AI_CORE" else None, state, ws, n)

    # -- description -----------------------------------------------------------------------------
    def input_index(self, name: str) -> int:
        for d in self.inputs:
            if d.name == name:
                return d.index
        raise AclError(ACL_ERROR_INVALID_PARAM, f"model: input name must be one of "
                       f"{[d.name for d in self.inputs]}, got {name!r}")

    def engines(self) -> dict:
        """{node name: "AI_CORE" | "AI_CPU"}: where each node of the converted graph runs (the
        nodes fused into a Conv run on the AI Core with it)."""
        return {name: n.engine for n in self.nodes for name in (n.fused or (n.name,))}

    # -- execution -------------------------------------------------------------------------------
    def _device_arg(self, desc: TensorDesc, value, stream, is_input: bool) -> DeviceArray:
        code = ACL_ERROR_MODEL_INPUT_NOT_MATCH if is_input else ACL_ERROR_MODEL_OUTPUT_NOT_MATCH
        what = "input" if is_input else "output"
        if isinstance(value, DeviceArray):
            if value.nbytes != desc.size and not (self.dynamic_mode in ("batch", "image_size",
                                                                       "dims") and
                                                  value.nbytes > desc.size):
                raise AclError(code, f"model execute: {what} {desc.index} ({desc.name!r}) must "
                               f"have {desc.size} bytes ({desc.dtype}{list(desc.shape)}), got "
                               f"{value.nbytes} ({value.dtype}{list(value.shape)})")
            if value.shape != desc.shape or value.dtype != np.dtype(desc.dtype):
                value = DeviceArray(desc.shape, desc.dtype, value.ptr)
            return value
        key = (what, desc.index, desc.shape)
        buf = self._staging.get(key)
        if buf is None:
            buf = self._staging[key] = device_empty(desc.shape, desc.dtype, device=self.device)
        if is_input:
            a = np.asarray(value)
            if a.shape != desc.shape:
                raise AclError(code, f"model execute: input {desc.index} ({desc.name!r}) must "
                               f"have shape {list(desc.shape)}, got {list(a.shape)}")
            buf.copy_from_host(a.astype(desc.dtype, copy=False), stream)
        return buf

    def execute(self, inputs, stream: Stream | None = None, outputs=None):
        """Mirrors `aclmdlExecute` / `aclmdlExecuteAsync`.

        `inputs`: a list in model order or a dict by name, of numpy arrays or `rt.DeviceArray`s.
        With numpy inputs the call is synchronous and returns numpy outputs. With DeviceArrays
        every node is queued on `stream` (default: the current stream) and the call returns the
        output DeviceArrays (`outputs`, if given, else buffers owned by the model that the next
        execution reuses) before the work is done.
        """
        if self.shape_ranges:       # dynamic shape: the graph for these shapes (dynamic.py)
            inputs, target = self._dynamic.route_inputs(inputs)
            if target is not self:
                return target.execute(inputs, stream, outputs)
        if isinstance(inputs, dict):
            missing = [d.name for d in self.inputs if d.name not in inputs]
            if missing:
                raise AclError(ACL_ERROR_MODEL_INPUT_NOT_MATCH,
                               f"model execute: inputs must name every model input, missing "
                               f"{missing}")
            inputs = [inputs[d.name] for d in self.inputs]
        inputs = list(inputs)
        if len(inputs) != len(self.inputs):
            raise AclError(ACL_ERROR_MODEL_INPUT_NOT_MATCH,
                           f"model execute: inputs must have {len(self.inputs)} entries, got "
                           f"{len(inputs)}")
        # numpy (or no inputs and no output buffers): synchronous, numpy out
        host = not all(isinstance(x, DeviceArray) for x in inputs) or \
            (not inputs and not outputs)
        stream = stream or current_stream()
        with self._lock:
            bound = dict(self._views)
            for d, x in zip(self.inputs, inputs):
                bound[d.name] = self._device_arg(d, x, stream, True)
            outs = list(outputs) if outputs is not None else [None] * len(self.outputs)
            if len(outs) != len(self.outputs):
                raise AclError(ACL_ERROR_MODEL_OUTPUT_NOT_MATCH,
                               f"model execute: outputs must have {len(self.outputs)} entries, "
                               f"got {len(outs)}")
            for d, o in zip(self.outputs, outs):
                bound[d.name] = self._device_arg(d, o, stream, False)
            for node in self.nodes:
                self._launch(node, bound, stream)
            result = [bound[d.name] for d in self.outputs]
        if not host:
            return result
        stream.synchronize()
        return [r.copy_to_host() for r in result]

    def _launch(self, node: _Node, bound: dict, stream: Stream) -> None:
        ins = [bound.get(i) if i else None for i in node.inputs]
        outs = [bound.get(o) for o in node.outputs]
        if node.engine == "AI_CORE":
            _labels.local.node = node.name
            try:
                node.impl.launch(node.raw, node.state, ins, outs, node.workspace, stream)
                return
            except AclError:
                raise
            except Exception as e:
                raise AclError(ACL_ERROR_RT_MODEL_EXECUTE,
                               f"model execute: node {node.name!r} ({node.op}, AI Core) failed to "
                               f"launch: {type(e).__name__}: {e}") from e
            finally:
                _labels.local.node = None

        # views of the memory taken now: a free of an input after execute is stream-ordered
        # (the memory stays reserved for this task), the array object itself is gone by then
        in_views = [None if a is None else a.host_view() for a in ins]
        out_views = [None if a is None else a.host_view() for a in outs]

        def run(node=node, in_views=in_views, out_views=out_views):
            try:
                results = aicpu.run(node.op, node.attrs, in_views)
                for dst, val in zip(out_views, results):
                    if dst is not None:
                        dst[...] = np.asarray(val).reshape(dst.shape)
            except Exception as e:
                raise AclError(ACL_ERROR_RT_MODEL_EXECUTE,
                               f"model execute: node {node.name!r} ({node.op}, AI CPU) failed: "
                               f"{type(e).__name__}: {e}") from e
        record_arrays(ins + outs, stream.enqueue(run, "aicpu", f"{node.name} (AI_CPU {node.op})"))

    def unload(self) -> None:
        """Mirrors `aclmdlUnload`: frees the weights and workspace (stream-ordered)."""
        self._dynamic.unload()
        for buf in [self._weights, self._work, *self._staging.values()]:
            buf.free()
        self._staging.clear()
        self._views.clear()

    def __repr__(self) -> str:
        return (f"Model({self.source!r}, inputs={[(d.name, d.shape) for d in self.inputs]}, "
                f"outputs={[(d.name, d.shape) for d in self.outputs]}, nodes={len(self.nodes)})")
