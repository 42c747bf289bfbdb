"""Dynamic gears and dynamic shape for `rt.Model` (docs/dynamic-shapes.md).

`rt.Model` holds a `DynamicShapes` (its `_dynamic`) and delegates its gear and shape calls to
it. Three kinds of model come out of ATC besides static ones:

- gears (`--dynamic_image_size`, `--dynamic_dims`): one converted graph per gear in the file;
  `set_dynamic_hw_size(h, w)` / `set_input_dynamic_dims(dims)` pick one (mirrors
  aclmdlSetDynamicHWSize / aclmdlSetInputDynamicDims), bound lazily like the batch graphs;
- ranges (`--input_shape "x:1~4,3,100~300,-1"`): the file holds a main graph (converted at the
  upper bounds, or the lower ones when a dim is unbounded) and the ONNX graph as protobuf data.
  `execute` takes the concrete shapes from its inputs, refuses a dim outside its range, and runs
  the graph specialised for those shapes: the ATC passes run again for them (shape inference,
  folding, memory plan) and the result loads as a static model, cached per shape (LRU of
  `ASCEND_EMU_MODEL_SHAPE_CACHE`, default 8; each cached shape holds its own weights and
  workspace). Nothing from the file is executed: the graph is parsed by the `onnx` package,
  which range models therefore need at execute.
"""
from __future__ import annotations

import collections
import os

import numpy as np

from ..array import DeviceArray
from ..atc.convert import AtcError, build, external_tensors   # ATC's passes, rerun per shape
from ..errors import (AclError, ACL_ERROR_DESERIALIZE_MODEL, ACL_ERROR_FEATURE_UNSUPPORTED,
                      ACL_ERROR_INVALID_PARAM, ACL_ERROR_MODEL_INPUT_NOT_MATCH)
from ..graph.format import pack, parse

#: the ATC option that makes each kind of dynamic model (what error messages name)
KIND_OPTIONS = {"batch": "--dynamic_batch_size", "image_size": "--dynamic_image_size",
          "dims": "--dynamic_dims", "shape": "--input_shape ranges"}


def _cache_size() -> int:
    try:
        return max(1, int(os.environ.get("ASCEND_EMU_MODEL_SHAPE_CACHE", "8")))
    except ValueError:
        return 8


def _range_text(r) -> str:
    return f"[{r[0]}, {'inf' if r[1] == -1 else r[1]}]"


class DynamicShapes:
    """The dynamic side of one `rt.Model`: which kind of dynamic model it is, its gears and
    ranges, the gear bound now, and the per-shape specialised models (an LRU). It rebinds the
    model's current graph (`inputs`, `outputs`, views and nodes) when a gear is picked."""

    def __init__(self, model) -> None:
        self.model = model
        h = model.header
        gears = h.get("dynamic_gears") or {}
        ranged = h.get("dynamic_shape") or {}
        self.mode = "batch" if model.dynamic_batch_sizes else \
            gears.get("mode") or ("shape" if ranged else None)
        #: gears as given to ATC ([h, w] or the -1 dims' values), the current gear's index
        self.gears = [tuple(g) for g in gears.get("gears", [])]
        self.gear_shapes = [dict(s) for s in gears.get("shapes", [])]
        self.gear_input_shape = dict(gears.get("input_shape", {}))
        self.gear = gears.get("main")
        #: {input name: [(lo, hi), ...]} of a range model (hi -1: unbounded)
        self.shape_ranges = {n: [tuple(r) for r in rs]
                             for n, rs in ranged.get("ranges", {}).items()}
        #: {output name: dims with -1 where they follow the input ranges} of a range model
        self.output_dims = dict(ranged.get("output_dims", {}))
        # what a model desc shows: the main graph (largest batch, or upper bounds); for gears
        # each input's and output's largest shape over the gears (acl buffers are sized by it)
        self.declared_inputs, self.declared_outputs = list(model.inputs), list(model.outputs)
        for g in gears.get("variants", {}).values():
            for lst, names in ((self.declared_inputs, g["inputs"]),
                               (self.declared_outputs, g["outputs"])):
                for i, n in enumerate(names):
                    t = g["tensors"][n]
                    d = type(lst[i])(i, n, tuple(t["shape"]), t["dtype"])
                    if d.size > lst[i].size:
                        lst[i] = d
        self._gear_bound = {self.gear: (model.inputs, model.outputs, model._views, model.nodes)} \
            if gears else {}
        #: {input shapes: the static model converted for them}, least recently used first
        self.specialised_models: collections.OrderedDict = collections.OrderedDict()

    def mode_error(self, api: str, want: str) -> AclError:
        got = KIND_OPTIONS.get(self.mode, "a static model")
        return AclError(ACL_ERROR_INVALID_PARAM, f"{api}: the model must be converted with "
                        f"{KIND_OPTIONS[want]}, got {got}")

    # -- gears -----------------------------------------------------------------------------------
    def bind_gear(self, index: int) -> None:
        m = self.model
        with m._lock:
            if index not in self._gear_bound:
                self._gear_bound[index] = m._bind_variant(
                    m.header["dynamic_gears"]["variants"][str(index)])
            m.inputs, m.outputs, m._views, m.nodes = self._gear_bound[index]
            self.gear = index

    def set_hw_size(self, height: int, width: int) -> None:
        api = "set_dynamic_hw_size"
        if self.mode != "image_size":
            raise self.mode_error(api, "image_size")
        key = (height, width)
        if key not in self.gears:
            raise AclError(ACL_ERROR_INVALID_PARAM, f"{api}: (height, width) must be one of the "
                           f"gears {[list(g) for g in self.gears]}, got height={height!r}"
                           f", width={width!r}")
        self.bind_gear(self.gears.index(key))

    def dims_of(self, gear: int) -> list[int]:
        shapes = self.gear_shapes[gear]
        return [d for desc in self.declared_inputs for d in shapes.get(desc.name, desc.shape)]

    def set_dims(self, dims) -> None:
        api = "set_input_dynamic_dims"
        if self.mode != "dims":
            raise self.mode_error(api, "dims")
        try:
            dims = [int(d) for d in dims]
        except (TypeError, ValueError):
            raise AclError(ACL_ERROR_INVALID_PARAM, f"{api}: dims must be a list of ints, got "
                           f"dims={dims!r}") from None
        full = [self.dims_of(i) for i in range(len(self.gears))]
        short = [list(g) for g in self.gears]
        for options in (full, short):
            if dims in options:
                self.bind_gear(options.index(dims))
                return
        raise AclError(ACL_ERROR_INVALID_PARAM, f"{api}: dims must be one of the gears "
                       f"{short} (the -1 dims of --input_shape "
                       f"{self.gear_input_shape}) or their full dims {full}, got dims={dims}")

    # -- ranges ----------------------------------------------------------------------------------
    def check_shapes(self, shapes: list, api: str = "model execute") -> None:
        """Refuse input shapes outside the ranges given to ATC (ACL_ERROR_MODEL_INPUT_NOT_MATCH,
        naming the input, dim and range)."""
        for d, shape in zip(self.declared_inputs, shapes):
            rs = self.shape_ranges.get(d.name) or [(x, x) for x in d.shape]
            if len(shape) != len(rs):
                raise AclError(ACL_ERROR_MODEL_INPUT_NOT_MATCH, f"{api}: input {d.index} "
                               f"({d.name!r}) must have {len(rs)} dims, got shape {list(shape)}")
            for k, (x, r) in enumerate(zip(shape, rs)):
                if x < r[0] or (r[1] != -1 and x > r[1]):
                    raise AclError(ACL_ERROR_MODEL_INPUT_NOT_MATCH, f"{api}: input {d.index} "
                                   f"({d.name!r}) dim {k} must be in {_range_text(r)} (the "
                                   f"--input_shape range), got {x} (shape {list(shape)})")

    def specialised(self, shapes: list, api: str = "model execute"):
        """The model to run for these input shapes (in input order): the model itself for the
        main shapes, else a static model converted for them (cached, LRU)."""
        m = self.model
        shapes = [tuple(int(x) for x in s) for s in shapes]
        if len(shapes) != len(self.declared_inputs):
            raise AclError(ACL_ERROR_MODEL_INPUT_NOT_MATCH, f"{api}: inputs must have "
                           f"{len(self.declared_inputs)} entries, got {len(shapes)}")
        self.check_shapes(shapes, api)
        key = tuple(shapes)
        if key == tuple(d.shape for d in self.declared_inputs):
            m.inputs, m.outputs = self.declared_inputs, self.declared_outputs
            return m
        with m._lock:
            sub = self.specialised_models.get(key)
            if sub is None:
                sub = self.specialised_models[key] = self._convert_for(shapes, api)
                while len(self.specialised_models) > _cache_size():
                    self.specialised_models.popitem(last=False)[1].unload()
            self.specialised_models.move_to_end(key)
        m.inputs, m.outputs = sub.inputs, sub.outputs     # what get_cur_output_dims shows
        return sub

    def _convert_for(self, shapes: list, api: str):
        m = self.model
        try:
            import onnx
        except ImportError:
            raise AclError(ACL_ERROR_FEATURE_UNSUPPORTED, f"{api}: a model converted with "
                           f"--input_shape ranges needs the onnx package at execute to specialise "
                           f"its graph: pip install 'ascend-emu[models]' (or pip install onnx)") \
                from None
        w = next(w for w in m.header["weights"]
                 if w["name"] == m.header["dynamic_shape"]["graph"])
        raw = m._weights.host_view()[w["offset"]:w["offset"] + w["nbytes"]].tobytes()
        try:
            graph = onnx.load_from_string(raw)
        except Exception as e:         # protobuf's DecodeError and kin: a corrupt graph
            raise AclError(ACL_ERROR_DESERIALIZE_MODEL, f"{api}: the model's embedded ONNX "
                           f"graph cannot be parsed: {e}") from e
        external = external_tensors(graph)
        if external:        # never resolved: it would read a host file named by the model
            raise AclError(ACL_ERROR_DESERIALIZE_MODEL, f"{api}: the model's embedded ONNX graph "
                           f"must hold every tensor's data, got external data for "
                           f"{external[:3]}")
        try:
            header, consts, _ = build(graph, m.header.get("soc_version", "Ascend910B2"),
                                      {d.name: list(s) for d, s in
                                       zip(self.declared_inputs, shapes)})
        except AtcError as e:
            raise AclError(ACL_ERROR_MODEL_INPUT_NOT_MATCH, f"{api}: cannot specialise the "
                           f"graph for input shapes {[list(s) for s in shapes]}: {e}") from e
        where = f"{m.source} at {[list(s) for s in shapes]}"
        h, blob = parse(pack(header, consts), where)
        return type(m)(h, blob, m.device, where)

    def route_inputs(self, inputs) -> tuple[list, object]:
        """(inputs in model order, the model that runs them) for a range model's execute."""
        if isinstance(inputs, dict):
            missing = [d.name for d in self.declared_inputs if d.name not in inputs]
            if missing:
                raise AclError(ACL_ERROR_MODEL_INPUT_NOT_MATCH, f"model execute: inputs must "
                               f"name every model input, missing {missing}")
            inputs = [inputs[d.name] for d in self.declared_inputs]
        inputs = list(inputs)
        shapes = [x.shape if isinstance(x, DeviceArray) else np.shape(x) for x in inputs]
        return inputs, self.specialised(shapes)

    def unload(self) -> None:
        """Unload every specialised model (the model's own unload calls this)."""
        with self.model._lock:
            while self.specialised_models:
                self.specialised_models.popitem()[1].unload()
