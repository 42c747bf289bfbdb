"""ONNX -> offline model (the ATC step). Needs `onnx` (`pip install 'ascend-emu[models]'`).

Passes, in order: fix the input shapes (`input_shape`), ONNX shape inference, Constant nodes and
initializers -> weights, refuse ops without an implementation (by name), constant folding (every
node whose inputs are all constants runs once here, on the AI CPU implementations),
BatchNormalization folded into the Conv before it, Gemm with constant B normalised (B transposed
to K x N, alpha and beta folded), dead nodes removed, a static memory plan for the activations and
node workspaces (first fit by size over lifetimes: tensors that are never live at the same time
share bytes; the outputs of a Conv's Relu/Add/Sum chain are live from the Conv on, as rt.model
runs the chain as one node), then the file (rt/graph/format.py).
"""
from __future__ import annotations

import math
import os

import numpy as np

from ..graph import aicpu
from ..graph.format import ALIGN, DTYPES, MAX_TENSOR_BYTES, align, pack
from ..graph.onnx_types import numpy_dtype
from ..soc import SOCS
from . import shapes as shape_passes
from . import windows


class AtcError(ValueError):
    """A model ATC refuses, with the reason (op name, tensor name, ...)."""


def _onnx():
    try:
        import onnx
        from onnx import numpy_helper
    except ImportError as e:      # pragma: no cover - depends on the environment
        raise AtcError("atc: the onnx package is needed to read ONNX models: "
                       "pip install 'ascend-emu[models]' (or pip install onnx)") from e
    return onnx, numpy_helper


def external_tensors(model) -> list[str]:
    """Names of the tensors in `model` (initializers, sparse initializers, tensor attributes, in
    every subgraph) whose data lives in an external file. A graph handed over as protobuf data
    (an embedded graph, a ModelProto) has no directory of its own: its external data would be
    resolved against the working directory, so such tensors are refused, never read."""
    onnx, _ = _onnx()
    found, graphs = [], [model.graph]
    while graphs:
        g = graphs.pop()
        tensors = list(g.initializer)
        for sp in g.sparse_initializer:
            tensors += [sp.values, sp.indices]
        for n in g.node:
            for a in n.attribute:
                tensors += ([a.t] if a.HasField("t") else []) + list(a.tensors)
                for sp in ([a.sparse_tensor] if a.HasField("sparse_tensor") else []) + \
                        list(a.sparse_tensors):
                    tensors += [sp.values, sp.indices]
                graphs += ([a.g] if a.HasField("g") else []) + list(a.graphs)
        found += [t.name or "<unnamed>" for t in tensors
                  if t.data_location == onnx.TensorProto.EXTERNAL or len(t.external_data)]
    return found


def parse_input_shape(text: str | None) -> dict:
    """"x:1,3,224,224;y:1,10" -> {"x": [1, 3, 224, 224], "y": [1, 10]} (ATC's --input_shape,
    static dims only; `dynamic.parse_shape_spec` also takes -1 and lo~hi)."""
    from . import dynamic
    spec = dynamic.parse_shape_spec(text, AtcError)
    for name, dims in spec.items():
        if not dynamic.is_static({name: dims}):
            raise AtcError(f"atc: --input_shape dims must be >= 1 (-1 and lo~hi only with "
                           f"--dynamic_dims / --dynamic_image_size / ranges), got "
                           f"{name}:{dims}")
    return spec


def _attrs(onnx, node) -> dict:
    from onnx import numpy_helper
    out = {}
    for a in node.attribute:
        v = onnx.helper.get_attribute_value(a)
        if isinstance(v, bytes):
            v = v.decode()
        elif isinstance(v, onnx.TensorProto):
            v = numpy_helper.to_array(v)
        elif isinstance(v, list) and v and isinstance(v[0], bytes):
            v = [s.decode() for s in v]
        elif isinstance(v, (onnx.GraphProto, onnx.SparseTensorProto)) or \
                (isinstance(v, list) and v and not isinstance(v[0], (int, float, str))):
            raise AtcError(f"atc: node {node.name!r} ({node.op_type}): attribute {a.name!r} of "
                           f"type {type(v).__name__} is not supported")
        out[a.name] = v
    return out


def _jsonable(v):
    if isinstance(v, np.ndarray):
        return v.tolist()
    if isinstance(v, (np.integer, np.floating)):
        return v.item()
    if isinstance(v, list):
        return [_jsonable(x) for x in v]
    return v


class Graph:
    """The graph between passes: nodes (dicts), tensor specs, constants (numpy)."""

    def __init__(self):
        self.nodes: list[dict] = []
        self.specs: dict = {}            # name -> (shape tuple, dtype name)
        self.consts: dict = {}           # name -> np.ndarray
        self.inputs: list[str] = []
        self.outputs: list[str] = []

    def consumers(self, name: str) -> list[dict]:
        return [n for n in self.nodes if name in n["inputs"]]


def _static_shape(vi, what: str) -> tuple:
    dims = []
    for d in vi.type.tensor_type.shape.dim:
        if not d.HasField("dim_value"):
            raise AtcError(f"atc: {what} {vi.name!r} has a dynamic dim "
                           f"({d.dim_param or '?'}); give static shapes with "
                           f"--input_shape \"{vi.name}:...\"")
        dims.append(int(d.dim_value))
    return tuple(dims)


def load_onnx(model, input_shape: dict | None = None) -> Graph:
    """ONNX ModelProto (or path) -> Graph with static shapes (shape inference run here)."""
    onnx, numpy_helper = _onnx()
    if not isinstance(model, onnx.ModelProto):
        try:
            model = onnx.load(os.fspath(model))
        except Exception as e:
            raise AtcError(f"atc: cannot read ONNX model {model!r}: {e}") from e
    external = external_tensors(model)      # a file's own external data was read by onnx.load
    if external:
        raise AtcError(f"atc: tensors must hold their data in the model, got external data for "
                       f"{external[:3]} in a model given as protobuf data (no directory to "
                       f"resolve it against; load the .onnx file by path)")
    for imp in model.opset_import:
        if imp.domain not in ("", "ai.onnx"):
            raise AtcError(f"atc: opset domain {imp.domain!r} is not supported (only ai.onnx)")
    unknown = {}
    for i, n in enumerate(model.graph.node):     # refused before anything else looks at shapes
        if n.op_type != "Constant" and (n.op_type not in aicpu.OPS or
                                        n.domain not in ("", "ai.onnx")):
            op = n.op_type if n.domain in ("", "ai.onnx") else f"{n.domain}::{n.op_type}"
            unknown.setdefault(op, []).append(n.name or f"{n.op_type}_{i}")
    if unknown:
        what = "; ".join(f"op {op!r} (nodes {names[:3]})" for op, names in sorted(unknown.items()))
        raise AtcError(f"atc: unsupported op(s): {what}: no AI Core or AI CPU implementation. "
                       f"Supported ops: {', '.join(sorted(aicpu.OPS))}")
    g = model.graph
    if not g.output:
        raise AtcError("atc: the model must have a graph with at least one output, got an "
                       "empty graph (an empty or non-ONNX file?)")
    known = {t.name for t in g.initializer} | {v.name for v in g.input} | {""}
    for i, n in enumerate(g.node):      # ONNX orders nodes topologically: a cycle breaks that
        late = [x for x in n.input if x not in known]
        if late:
            raise AtcError(f"atc: the graph must be acyclic with nodes in topological order, got "
                           f"node {n.name or n.op_type + '_' + str(i)!r} reading {late[:3]} "
                           f"before any node produces it")
        known.update(n.output)
    init_names = {t.name for t in g.initializer}
    input_shape = dict(input_shape or {})
    changed = bool(input_shape)
    for vi in g.input:
        if vi.name in init_names:
            continue
        if vi.name in input_shape:
            dims = input_shape.pop(vi.name)
            shape = vi.type.tensor_type.shape
            if len(shape.dim) and len(shape.dim) != len(dims):
                raise AtcError(f"atc: --input_shape for {vi.name!r} must have {len(shape.dim)} "
                               f"dims, got {dims}")
            del shape.dim[:]
            for d in dims:
                shape.dim.add().dim_value = d
    if input_shape is not None and len(input_shape) == 0 and changed:
        del g.value_info[:]             # re-infer everything from the new input shapes
        for vi in g.output:
            vi.type.tensor_type.ClearField("shape")
    if input_shape:
        raise AtcError(f"atc: --input_shape names {sorted(input_shape)} are not model inputs "
                       f"(inputs: {[v.name for v in g.input if v.name not in init_names]})")
    try:
        model = onnx.shape_inference.infer_shapes(model, strict_mode=True, data_prop=True)
        if shape_passes.has_dynamic_dims(model.graph):    # shape computations: fold, infer again
            model = shape_passes.fold_for_shapes(onnx, numpy_helper, model, _attrs,
                                                 check_tensor_size)
            model = onnx.shape_inference.infer_shapes(model, strict_mode=True, data_prop=True)
    except AtcError:
        raise
    except Exception as e:
        raise AtcError(f"atc: ONNX shape inference failed: {e}") from e
    g = model.graph
    graph = Graph()
    for t in g.initializer:
        graph.consts[t.name] = numpy_helper.to_array(t)
    for vi in list(g.input) + list(g.value_info) + list(g.output):
        if vi.name in graph.consts or vi.name in graph.specs:
            continue
        if vi.type.tensor_type.elem_type and vi.type.tensor_type.HasField("shape"):
            graph.specs[vi.name] = (_static_shape(vi, "tensor"),
                                    numpy_dtype(vi.type.tensor_type.elem_type).name)
    graph.inputs = [v.name for v in g.input if v.name not in graph.consts]
    graph.outputs = [v.name for v in g.output]
    for i, n in enumerate(g.node):
        if n.domain not in ("", "ai.onnx"):
            raise AtcError(f"atc: op {n.domain}::{n.op_type} (node {n.name!r}) is not supported: "
                           f"no AI Core or AI CPU implementation")
        node = {"name": n.name or f"{n.op_type}_{i}", "op": n.op_type, "attrs": _attrs(onnx, n),
                "inputs": list(n.input), "outputs": list(n.output)}
        if n.op_type == "Constant":
            val = node["attrs"].get("value")
            if val is None:
                for k in ("value_float", "value_int", "value_floats", "value_ints"):
                    if k in node["attrs"]:
                        val = np.array(node["attrs"][k],
                                       np.float32 if "float" in k else np.int64)
            if val is None:
                raise AtcError(f"atc: Constant node {node['name']!r} has no supported value "
                               f"attribute")
            graph.consts[n.output[0]] = np.asarray(val)
            continue
        graph.nodes.append(node)
    for name in graph.inputs + graph.outputs:
        if name not in graph.specs and name not in graph.consts:
            raise AtcError(f"atc: model input/output {name!r} has no static shape after shape "
                           f"inference; give one with --input_shape")
    return graph


def check_tensor_size(name: str, shape, dtype) -> None:
    """Refuse a tensor no device could hold (its bytes past the largest SoC memory)."""
    nbytes = math.prod(shape) * np.dtype(dtype).itemsize
    if nbytes > MAX_TENSOR_BYTES:
        raise AtcError(f"atc: tensor {name!r} must fit in {MAX_TENSOR_BYTES} bytes (the largest "
                       f"device memory), got shape={list(shape)} ({nbytes} bytes)")


# ---- passes --------------------------------------------------------------------------------------

def fold_constants(g: Graph) -> int:
    """Run every node whose inputs are all constants; its outputs become constants."""
    folded, keep = 0, []
    for n in g.nodes:
        if all((not i) or i in g.consts for i in n["inputs"]) and \
                not any(o in g.outputs for o in n["outputs"]):
            for o in n["outputs"]:      # sizes bounded before anything is materialised
                if o in g.specs:
                    check_tensor_size(o, *g.specs[o])
            try:
                vals = aicpu.run(n["op"], n["attrs"], [g.consts[i] if i else None
                                                       for i in n["inputs"]])
            except (NotImplementedError, ValueError, MemoryError) as e:
                raise AtcError(f"atc: node {n['name']!r} ({n['op']}): {e}") from e
            for o, v in zip(n["outputs"], vals):
                if o:
                    g.consts[o] = np.asarray(v)
            folded += 1
        elif n["op"] == "Shape" and n["inputs"][0] in g.specs:
            g.consts[n["outputs"][0]] = aicpu.shape_of(g.specs[n["inputs"][0]][0], n["attrs"])
            folded += 1
        else:
            keep.append(n)
    g.nodes = keep
    return folded


def fold_batchnorm(g: Graph) -> int:
    """Conv -> BatchNormalization (constant statistics) becomes one Conv with new W and b."""
    count = 0
    for bn in [n for n in g.nodes if n["op"] == "BatchNormalization"]:
        y = bn["inputs"][0]
        convs = [n for n in g.nodes if n["op"] == "Conv" and y in n["outputs"]]
        if len(bn["outputs"]) > 1 and any(bn["outputs"][1:]) or not convs:
            continue
        conv = convs[0]
        if len(g.consumers(y)) != 1 or y in g.outputs or \
                not all(i in g.consts for i in bn["inputs"][1:5]) or \
                conv["inputs"][1] not in g.consts or \
                (len(conv["inputs"]) > 2 and conv["inputs"][2] and
                 conv["inputs"][2] not in g.consts):
            continue
        scale, beta, mean, var = (g.consts[i].astype(np.float64) for i in bn["inputs"][1:5])
        w = g.consts[conv["inputs"][1]]
        b = g.consts[conv["inputs"][2]].astype(np.float64) \
            if len(conv["inputs"]) > 2 and conv["inputs"][2] else np.zeros(w.shape[0])
        inv = scale / np.sqrt(var + bn["attrs"].get("epsilon", 1e-5))
        wname, bname = conv["name"] + "::weight_bn", conv["name"] + "::bias_bn"
        g.consts[wname] = (w.astype(np.float64) * inv.reshape(-1, *([1] * (w.ndim - 1)))) \
            .astype(w.dtype)
        g.consts[bname] = ((b - mean) * inv + beta).astype(w.dtype)
        conv["inputs"] = [conv["inputs"][0], wname, bname]
        conv["outputs"] = [bn["outputs"][0]]
        g.nodes.remove(bn)
        count += 1
    return count


def normalise_gemm(g: Graph) -> int:
    """Gemm with constant B (and C): B stored K x N, alpha/beta folded, C as a length-N bias."""
    count = 0
    for n in g.nodes:
        if n["op"] != "Gemm" or n["inputs"][1] not in g.consts or n["attrs"].get("transA", 0):
            continue
        c = n["inputs"][2] if len(n["inputs"]) > 2 and n["inputs"][2] else None
        if c is not None and c not in g.consts:
            continue
        a = n["attrs"]
        b = g.consts[n["inputs"][1]]
        b = (b.T if a.get("transB", 0) else b) * a.get("alpha", 1.0)
        n_out = b.shape[1]
        ins = [n["inputs"][0], n["name"] + "::B_kn"]
        g.consts[ins[1]] = np.ascontiguousarray(b).astype(g.consts[n["inputs"][1]].dtype)
        if c is not None:
            cv = g.consts[c] * a.get("beta", 1.0)
            if cv.size == n_out or cv.size == 1:
                g.consts[n["name"] + "::bias"] = np.broadcast_to(cv.reshape(-1), (n_out,)) \
                    .astype(b.dtype).copy()
                ins.append(n["name"] + "::bias")
            else:
                continue
        n["inputs"], n["attrs"] = ins, {}
        count += 1
    return count


def remove_dead(g: Graph) -> None:
    live = set(g.outputs)
    keep = []
    for n in reversed(g.nodes):
        if any(o in live for o in n["outputs"]):
            keep.append(n)
            live.update(i for i in n["inputs"] if i)
    g.nodes = keep[::-1]
    g.consts = {k: v for k, v in g.consts.items() if k in live}


def node_workspace(n: dict, specs: dict) -> int:
    """Bytes of scratch a node needs on the device: Conv's img2col matrix
    ((C/group * KH * KW + 1) rows of OH * OW; the +1 row of ones carries the bias), none for a
    1x1 stride-1 unpadded Conv; on the stride-2 path also x split into even/odd columns (the
    formula mirrors kernels.conv2d.Conv2dTiling.col_elems: rt cannot import kernels). A 3x3
    stride-1 Conv that kernels.conv2d runs without img2col (its tap path: x with a zero border,
    about (H+2)*(W+2)/(9*H*W) of this) uses only the start of it."""
    if n["op"] != "Conv" or n["attrs"].get("group", 1) != 1:
        return 0
    xs, dt = specs[n["inputs"][0]]
    ys, _ = specs[n["outputs"][0]]
    if len(xs) != 4:
        return 0
    a = n["attrs"]
    kh, kw = a["kernel_shape"]
    # 1x1, stride 1, unpadded: the matmul reads x in place (kernels.conv2d's direct path)
    if (kh, kw) == (1, 1) and all(v == 1 for v in a.get("strides", [1])) and \
            not any(a.get("pads", [0])) and a.get("auto_pad", "NOTSET") in ("NOTSET", "VALID"):
        return 0
    strides, pads = a.get("strides", [1, 1]), a.get("pads", [0, 0, 0, 0])
    dil = a.get("dilations", [1, 1])
    c, isz, p = xs[1], np.dtype(dt).itemsize, ys[2] * ys[3]
    if strides[1] == 2 and dil[1] == 1 and xs[3] % 2 == 0 and 2 <= kw and pads[1] < kw:
        # kernels.conv2d's stride-2 path: img2col of the column-split x (2C channels, KW' taps)
        # rounded to 8 elements, then the split x itself
        kw2 = (kw - 1 - pads[1]) // 2 + (pads[1] + 1) // 2 + 1
        return (-(-((2 * c * kh * kw2 + 1) * p) // 8) * 8 + c * xs[2] * xs[3]) * isz
    return (c * kh * kw + 1) * p * isz


def plan_memory(g: Graph, order: list[dict]) -> tuple[int, dict, dict, int]:
    """Offsets in one workspace for activations and node workspaces. Returns (bytes, tensor
    offsets, node workspace offsets, bytes without reuse)."""
    io = set(g.inputs) | set(g.outputs)
    items = []                          # (size, start, end, key)
    first, last = {}, {}
    for i, n in enumerate(order):
        for o in n["outputs"]:
            if o and o not in io:
                first.setdefault(o, i)
                last.setdefault(o, i)
        for t in n["inputs"]:
            if t in first:
                last[t] = i
    # Conv -> Relu / Add / Sum chains run as one node on the AI Core (rt.model's load-time
    # fusion, as ATC plans after its fusion passes): the chain's outputs are written while the
    # Conv still reads its input and workspace, so they are live from the Conv on
    conv = None
    for i, n in enumerate(order):
        if n["op"] == "Conv":
            conv = i
        elif conv is not None and n["op"] in ("Relu", "Add", "Sum") and \
                set(order[i - 1]["outputs"]) & set(n["inputs"]):
            for o in n["outputs"]:
                if o in first:
                    first[o] = min(first[o], conv)
        else:
            conv = None
    for t in first:
        shape, dt = g.specs[t]
        items.append((align(max(math.prod(shape) * np.dtype(dt).itemsize, 1)), first[t],
                      last[t], ("t", t)))
    for i, n in enumerate(order):
        ws = node_workspace(n, g.specs)
        if ws:
            items.append((align(ws), i, i, ("w", n["name"])))
    placed = []                          # (offset, size, start, end)
    offsets = {}
    for size, s, e, key in sorted(items, key=lambda it: (-it[0], it[1])):
        off, moved = 0, True
        # first fit: move past every placed item live at the same time that overlaps
        while moved:
            moved = False
            for o2, sz2, s2, e2 in placed:
                if s2 <= e and s <= e2 and off < o2 + sz2 and o2 < off + size:
                    off, moved = align(o2 + sz2, ALIGN), True
        placed.append((off, size, s, e))
        offsets[key] = off
    total = max((o + sz for o, sz, _, _ in placed), default=0)
    tensors = {k[1]: v for k, v in offsets.items() if k[0] == "t"}
    nodes = {k[1]: v for k, v in offsets.items() if k[0] == "w"}
    return total, tensors, nodes, sum(it[0] for it in items)


# ---- driver --------------------------------------------------------------------------------------

def convert(model, output: str, soc_version: str = "Ascend910B2", input_shape=None,
            log=None, insert_op_conf=None, dynamic_batch_size=None, **dynamic) -> dict:
    """Convert an ONNX model (path or ModelProto) to `output` (".om" appended unless present;
    its folder is created). Returns a summary dict (path, ops, passes, plan). Raises AtcError.
    `dynamic`: dynamic_image_size, dynamic_dims, input_format and the graph options
    (out_nodes, input_fp16_nodes, output_type, precision_mode; see convert_to_bytes)."""
    data, summary = convert_to_bytes(model, soc_version, input_shape,
                                     insert_op_conf=insert_op_conf,    # AIPP: docs/dvpp.md
                                     dynamic_batch_size=dynamic_batch_size, **dynamic)
    path = os.fspath(output)
    path = path if path.endswith(".om") else path + ".om"
    try:
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        with open(path, "wb") as f:
            f.write(data)
    except OSError as e:
        raise AtcError(f"atc: --output must be a writable file path, got {path!r} "
                       f"({e.strerror})") from None
    return dict(summary, path=path)


def convert_to_bytes(model, soc_version: str = "Ascend910B2", input_shape=None,
                     insert_op_conf=None, dynamic_batch_size=None, dynamic_image_size=None,
                     dynamic_dims=None, input_format=None, out_nodes=None, input_fp16_nodes=None,
                     output_type=None, precision_mode=None) -> tuple:
    """Like `convert`, but returns (the file's bytes, summary) instead of writing a file
    (`rt.Model.load(bytes)` loads them; used by rt.onnx_backend). `dynamic_batch_size`
    ("1,2,4,8" or a list): one graph per batch size in the file; `dynamic_image_size`
    ("224,224;448,448") / `dynamic_dims` ("1,224;2,448") with -1 dims in `input_shape`: one
    graph per gear; ranges in `input_shape` ("x:1~4,3,-1,-1"): dynamic shape mode
    (rt/atc/dynamic.py, docs/dynamic-shapes.md). The graph options are rt/atc/options.py's."""
    if soc_version not in SOCS:
        raise AtcError(f"atc: --soc_version must be one of {sorted(SOCS)}, got {soc_version!r}")
    if input_format not in (None, "NCHW", "NHWC", "ND", "NCDHW", "NDHWC"):
        raise AtcError(f"atc: not supported: --input_format={input_format} (NCHW, NHWC, ND, "
                       f"NCDHW and NDHWC are)")
    from . import dynamic, options
    options.check_precision_mode(precision_mode, AtcError)
    graph_options = dict(out_nodes=out_nodes, input_fp16_nodes=input_fp16_nodes,
                         output_type=output_type, precision_mode=precision_mode,
                         input_format=input_format if insert_op_conf else None)
    run_build = build
    if any(graph_options.values()):
        def run_build(model, soc_version, shapes, insert_op_conf=None):
            return build(model, soc_version, shapes, insert_op_conf, graph_options)
    spec = dynamic.parse_shape_spec(input_shape, AtcError) \
        if isinstance(input_shape, (str, type(None))) \
        else {k: list(v) for k, v in input_shape.items()}
    modes = [o for o, v in (("--dynamic_batch_size", dynamic_batch_size),
                            ("--dynamic_image_size", dynamic_image_size),
                            ("--dynamic_dims", dynamic_dims)) if v]
    if dynamic.has_ranges(spec) or not dynamic.is_static(spec) and not modes:
        modes.append("--input_shape ranges")
    if len(modes) > 1:
        raise AtcError(f"atc: {' and '.join(modes)} are mutually exclusive, got both")
    if modes and modes[0] not in ("--dynamic_batch_size", "--dynamic_image_size") and \
            insert_op_conf:
        raise AtcError(f"atc: --insert_op_conf cannot be combined with {modes[0]}, got both")
    if dynamic_image_size or dynamic_dims:
        gear_build = run_build
        if insert_op_conf:          # static AIPP per gear: the source image is the gear's H x W
            def gear_build(model, soc_version, shapes, _conf=None):
                return run_build(model, soc_version, shapes, insert_op_conf)
        return dynamic.convert_gears(model, soc_version, spec,
                                     "image_size" if dynamic_image_size else "dims",
                                     dynamic_image_size or dynamic_dims, input_format,
                                     gear_build, AtcError)
    if modes == ["--input_shape ranges"]:
        return dynamic.convert_ranges(model, soc_version, spec, run_build, AtcError)
    if dynamic_batch_size:      # CANN writes the batch dim as -1 here; any value is replaced
        spec = {k: [1 if i == 0 and d == -1 else d for i, d in enumerate(v)]
                for k, v in spec.items()}
    if not dynamic.is_static(spec):
        raise AtcError(f"atc: --input_shape dims must be >= 1 (-1 only for the batch dim with "
                       f"--dynamic_batch_size), got {input_shape!r}")
    shapes = spec
    if dynamic_batch_size:
        return dynamic.convert_dynamic_batch(model, soc_version, shapes, dynamic_batch_size,
                                             run_build, AtcError, insert_op_conf)
    header, consts, summary = run_build(model, soc_version, shapes, insert_op_conf)
    data = pack(header, consts)
    return data, dict(summary, bytes=len(data))


def build(model, soc_version: str, shapes: dict, insert_op_conf=None,
          graph_options: dict | None = None) -> tuple:
    """The conversion up to the file: (header without the weights table, sorted
    [(weight name, array)], summary). `graph_options`: rt/atc/options.py's."""
    from . import options
    opts = graph_options or {}
    g = load_onnx(model, shapes)
    for name, (shape, dtype) in g.specs.items():
        check_tensor_size(name, shape, dtype)
    options.apply_out_nodes(g, opts.get("out_nodes"), AtcError)
    folded = fold_constants(g)
    bn = fold_batchnorm(g)
    gemm = normalise_gemm(g)
    windows.resolve_auto_pad(g)
    options.apply_precision_mode(g, opts.get("precision_mode"), AtcError)
    remove_dead(g)
    if insert_op_conf:              # AIPP (docs/dvpp.md): Aipp node(s) in front of model input(s)
        from .aipp import insert_aipp
        insert_aipp(g, insert_op_conf, AtcError, opts.get("input_format"))
    options.apply_input_fp16_nodes(g, opts.get("input_fp16_nodes"), AtcError)
    for name in g.outputs:          # a graph output that is a constant or an input: copy it
        if name in g.consts or name in g.inputs:
            src = name + "::src"
            if name in g.consts:
                g.consts[src] = g.consts.pop(name)
                g.specs[name] = (g.consts[src].shape, g.consts[src].dtype.name)
            else:
                raise AtcError(f"atc: graph output {name!r} is also a graph input; not supported")
            g.nodes.append({"name": name + "::identity", "op": "Identity", "attrs": {},
                            "inputs": [src], "outputs": [name]})
    options.apply_output_type(g, opts.get("output_type"), AtcError)
    used = {i for n in g.nodes for i in n["inputs"]} | set(g.outputs)
    for n in g.nodes:               # optional outputs nobody reads (Dropout's mask): dropped
        n["outputs"] = [o if k == 0 or o in used else "" for k, o in enumerate(n["outputs"])]
        for t in n["outputs"]:
            if t and t not in g.specs:
                raise AtcError(f"atc: shape inference could not determine the shape of {t!r} "
                               f"(output of node {n['name']!r}, {n['op']})")
    for name, v in g.consts.items():
        if v.dtype.name not in DTYPES:
            raise AtcError(f"atc: weight {name!r} has dtype {v.dtype}, not supported")
    ws_bytes, offsets, node_ws, naive = plan_memory(g, g.nodes)
    tensors = {}
    for name in g.inputs:
        tensors[name] = {"kind": "input"}
    for name in g.outputs:
        tensors[name] = {"kind": "output"}
    for name, off in offsets.items():
        tensors[name] = {"kind": "activation", "offset": off}
    for name, v in g.consts.items():
        tensors[name] = {"kind": "weight", "shape": list(v.shape), "dtype": v.dtype.name}
    for name, t in tensors.items():
        if t["kind"] != "weight":
            shape, dt = g.specs[name]
            t.update(shape=list(shape), dtype=dt)
    nodes = []
    for n in g.nodes:
        nn = {"name": n["name"], "op": n["op"], "inputs": n["inputs"], "outputs": n["outputs"],
              "attrs": {k: _jsonable(v) for k, v in n["attrs"].items()}}
        shape_passes.mark_zero_size_inputs(nn, g)
        if n["name"] in node_ws:
            nn.update(workspace_offset=node_ws[n["name"]],
                      workspace_bytes=node_workspace(n, g.specs))
        nodes.append(nn)
    header = {"format": "ascend-emu-om", "producer": "rt.atc", "soc_version": soc_version,
              "inputs": g.inputs, "outputs": g.outputs, "tensors": tensors, "nodes": nodes,
              "workspace_bytes": ws_bytes,
              "plan": {"activations": len(offsets), "node_workspaces": len(node_ws),
                       "bytes_without_reuse": naive, "bytes": ws_bytes}}
    ops = {}
    for n in g.nodes:
        ops[n["op"]] = ops.get(n["op"], 0) + 1
    summary = {"ops": ops, "folded_nodes": folded, "batchnorm_folded": bn,
               "gemm_normalised": gemm, "workspace_bytes": ws_bytes,
               "workspace_bytes_without_reuse": naive,
               "weight_bytes": sum(v.nbytes for v in g.consts.values())}
    return header, sorted(g.consts.items()), summary
