"""ATC: shapes that ONNX shape inference alone leaves open, and zero-size tensors.

- `fold_for_shapes`: a Reshape (or Expand, ConstantOfShape, ...) whose target is computed in the
  graph from `Shape` of a tensor with a static shape (ONNX's expanded functions: DepthToSpace,
  SpaceToDepth, GroupNormalization) gets dynamic dims from ONNX shape inference, whose data
  propagation does not cover every op of such chains (Div, for one). ATC folds the chain first:
  every node whose inputs are all constants (initializers, Constant nodes, `Shape` of a static
  tensor) is run on the AI CPU ops and becomes an initializer, then shape inference runs again.
  What still has a dynamic dim after that (a shape that depends on a model input's values) is
  refused as before.
- `mark_zero_size_inputs`: a zero-size tensor owns no device memory; a node reading one carries
  its description in the attribute `rt.graph.aicpu.ZERO_SIZE_INPUTS`, and the AI CPU op gets an
  empty array of that shape and dtype.
"""
from __future__ import annotations

import math

import numpy as np

from ..graph import aicpu


def has_dynamic_dims(graph) -> bool:
    """Whether some tensor of the ONNX graph lacks a shape or has a dim without a value."""
    for vi in list(graph.value_info) + list(graph.output):
        tt = vi.type.tensor_type
        if not tt.HasField("shape") or any(not d.HasField("dim_value") for d in tt.shape.dim):
            return True
    return False


def _constant_value(attrs: dict):
    val = attrs.get("value")
    if val is None:
        for k in ("value_float", "value_int", "value_floats", "value_ints"):
            if k in attrs:
                val = np.array(attrs[k], np.float32 if "float" in k else np.int64)
    return None if val is None else np.asarray(val)


def fold_for_shapes(onnx, numpy_helper, model, attrs_of, check_size):
    """A copy of `model` (after one shape inference) with its constant subgraphs folded into
    initializers. `attrs_of(onnx, node)`: the node's attributes as a dict; `check_size(name,
    shape, dtype)`: refuses a tensor too large to materialise."""
    g = model.graph
    static = {}
    for vi in list(g.input) + list(g.value_info) + list(g.output):
        tt = vi.type.tensor_type
        if tt.HasField("shape") and all(d.HasField("dim_value") for d in tt.shape.dim):
            static[vi.name] = tuple(int(d.dim_value) for d in tt.shape.dim)
    consts = {t.name: numpy_helper.to_array(t) for t in g.initializer}
    outputs = {o.name for o in g.output}
    keep, new = [], {}
    for n in g.node:
        val = None
        if n.op_type == "Constant":
            val = [_constant_value(attrs_of(onnx, n))]
        elif n.op_type == "Shape" and n.input[0] in static:
            val = [aicpu.shape_of(static[n.input[0]], attrs_of(onnx, n))]
        elif n.domain in ("", "ai.onnx") and n.op_type in aicpu.OPS and \
                all(not i or i in consts for i in n.input):
            for o in n.output:
                if o in static:
                    check_size(o, static[o], np.float64)
            try:
                val = aicpu.run(n.op_type, attrs_of(onnx, n),
                                [consts[i] if i else None for i in n.input])
            except Exception:
                val = None          # left to the converter, which reports it on its own terms
        if val is None or any(v is None for v in val[:1]) or \
                any(o in outputs for o in n.output):
            keep.append(n)
            continue
        for o, v in zip(n.output, val):
            if o:
                consts[o] = new[o] = np.asarray(v)
    if not new:
        return model
    out = onnx.ModelProto()
    out.CopyFrom(model)
    del out.graph.node[:]
    out.graph.node.extend(keep)
    used = {i for n in keep for i in n.input} | outputs
    out.graph.initializer.extend(numpy_helper.from_array(v, name) for name, v in new.items()
                                 if name in used)
    del out.graph.value_info[:]
    return out


def mark_zero_size_inputs(node: dict, g) -> None:
    """Record node `node`'s zero-size inputs (header node dict; `g`: the converter's Graph)."""
    empty = {}
    for i, name in enumerate(node["inputs"]):
        if not name:
            continue
        shape, dt = (g.consts[name].shape, g.consts[name].dtype.name) if name in g.consts \
            else g.specs[name]
        if math.prod(shape) == 0:
            empty[str(i)] = [list(shape), dt]
    if empty:
        node["attrs"][aicpu.ZERO_SIZE_INPUTS] = empty
