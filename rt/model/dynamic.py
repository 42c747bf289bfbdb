"""Dynamic gears and dynamic shape for `rt.Model` (docs/dynamic-shapes.md).

`rt.Model` inherits `DynamicModel`. Three kinds of model come out of ATC besides static ones:

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
from ..errors import (AclError, ACL_ERROR_DESERIALIZE_MODEL, ACL_ERROR_FEATURE_UNSUPPORTED,
                      ACL_ERROR_INVALID_PARAM, ACL_ERROR_MODEL_INPUT_NOT_MATCH)
from .format import pack, parse

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


class DynamicModel:
    """Gear selection and per-shape specialisation; `_init_dynamic` runs at the end of
    `Model.__init__` (the attributes it reads are rt.Model's)."""

    def _init_dynamic(self) -> None:
        h = self.header
        gears = h.get("dynamic_gears") or {}
        ranged = h.get("dynamic_shape") or {}
        self.dynamic_mode = "batch" if self.dynamic_batch_sizes else \
            gears.get("mode") or ("shape" if ranged else None)
        #: gears as given to ATC ([h, w] or the -1 dims' values), the current gear's index
        self.dynamic_gears = [tuple(g) for g in gears.get("gears", [])]
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
        self.declared_inputs, self.declared_outputs = list(self.inputs), list(self.outputs)
        for g in gears.get("variants", {}).values():
            for io, names in (("declared_inputs", g["inputs"]), ("declared_outputs",
                                                                   g["outputs"])):
                lst = getattr(self, io)
                for i, n in enumerate(names):
                    t = g["tensors"][n]
                    d = type(lst[i])(i, n, tuple(t["shape"]), t["dtype"])
                    if d.size > lst[i].size:
                        lst[i] = d
        self._gear_bound = {self.gear: (self.inputs, self.outputs, self._views, self.nodes)} \
            if gears else {}
        self._specialised: collections.OrderedDict = collections.OrderedDict()

    def _mode_error(self, api: str, want: str) -> AclError:
        got = KIND_OPTIONS.get(self.dynamic_mode, "a static model")
        return AclError(ACL_ERROR_INVALID_PARAM, f"{api}: the model must be converted with "
                        f"{KIND_OPTIONS[want]}, got {got}")

    # -- gears -----------------------------------------------------------------------------------
    def _bind_gear(self, index: int) -> None:
        with self._lock:
            if index not in self._gear_bound:
                self._gear_bound[index] = self._bind_variant(
                    self.header["dynamic_gears"]["variants"][str(index)])
            self.inputs, self.outputs, self._views, self.nodes = self._gear_bound[index]
            self.gear = index

    def set_dynamic_hw_size(self, height: int, width: int) -> None:
        """Mirrors `aclmdlSetDynamicHWSize`: run the graph converted for the (height, width)
        gear of ATC's --dynamic_image_size from the next execute on."""
        api = "set_dynamic_hw_size"
        if self.dynamic_mode != "image_size":
            raise self._mode_error(api, "image_size")
        key = (height, width)
        if key not in self.dynamic_gears:
            raise AclError(ACL_ERROR_INVALID_PARAM, f"{api}: (height, width) must be one of the "
                           f"gears {[list(g) for g in self.dynamic_gears]}, got height={height!r}"
                           f", width={width!r}")
        self._bind_gear(self.dynamic_gears.index(key))

    def dynamic_dims_of(self, gear: int) -> list[int]:
        """Every input's dims at `gear`, concatenated in input order (aclmdlIODims.dims of
        aclmdlGetInputDynamicDims / aclmdlSetInputDynamicDims)."""
        shapes = self.gear_shapes[gear]
        return [d for desc in self.declared_inputs for d in shapes.get(desc.name, desc.shape)]

    def set_input_dynamic_dims(self, dims) -> None:
        """Mirrors `aclmdlSetInputDynamicDims`: `dims` is every input's dims concatenated in
        input order (as get_input_dynamic_dims lists them) or just the values of the -1 dims
        (one gear of ATC's --dynamic_dims)."""
        api = "set_input_dynamic_dims"
        if self.dynamic_mode != "dims":
            raise self._mode_error(api, "dims")
        try:
            dims = [int(d) for d in dims]
        except (TypeError, ValueError):
            raise AclError(ACL_ERROR_INVALID_PARAM, f"{api}: dims must be a list of ints, got "
                           f"dims={dims!r}") from None
        full = [self.dynamic_dims_of(i) for i in range(len(self.dynamic_gears))]
        short = [list(g) for g in self.dynamic_gears]
        for options in (full, short):
            if dims in options:
                self._bind_gear(options.index(dims))
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
        """The model to run for these input shapes (in input order): this one for the main
        shapes, else a static model converted for them (cached, LRU)."""
        shapes = [tuple(int(x) for x in s) for s in shapes]
        if len(shapes) != len(self.declared_inputs):
            raise AclError(ACL_ERROR_MODEL_INPUT_NOT_MATCH, f"{api}: inputs must have "
                           f"{len(self.declared_inputs)} entries, got {len(shapes)}")
        self.check_shapes(shapes, api)
        key = tuple(shapes)
        if key == tuple(d.shape for d in self.declared_inputs):
            self.inputs, self.outputs = self.declared_inputs, self.declared_outputs
            return self
        with self._lock:
            sub = self._specialised.get(key)
            if sub is None:
                sub = self._specialised[key] = self._convert_for(shapes, api)
                while len(self._specialised) > _cache_size():
                    self._specialised.popitem(last=False)[1].unload()
            self._specialised.move_to_end(key)
        self.inputs, self.outputs = sub.inputs, sub.outputs     # what get_cur_output_dims shows
        return sub

    def _convert_for(self, shapes: list, api: str):
        try:
            import onnx
        except ImportError:
            raise AclError(ACL_ERROR_FEATURE_UNSUPPORTED, f"{api}: a model converted with "
                           f"--input_shape ranges needs the onnx package at execute to specialise "
                           f"its graph: pip install 'ascend-emu[models]' (or pip install onnx)") \
                from None
        from ..atc.convert import AtcError, build, external_tensors    # the ATC passes
        w = next(w for w in self.header["weights"]
                 if w["name"] == self.header["dynamic_shape"]["graph"])
        raw = self._weights.host_view()[w["offset"]:w["offset"] + w["nbytes"]].tobytes()
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
            header, consts, _ = build(graph, self.header.get("soc_version", "Ascend910B2"),
                                      {d.name: list(s) for d, s in
                                       zip(self.declared_inputs, shapes)})
        except AtcError as e:
            raise AclError(ACL_ERROR_MODEL_INPUT_NOT_MATCH, f"{api}: cannot specialise the "
                           f"graph for input shapes {[list(s) for s in shapes]}: {e}") from e
        where = f"{self.source} at {[list(s) for s in shapes]}"
        h, blob = parse(pack(header, consts), where)
        return type(self)(h, blob, self.device, where)

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

    def unload_specialised(self) -> None:
        with self._lock:
            while self._specialised:
                self._specialised.popitem()[1].unload()
