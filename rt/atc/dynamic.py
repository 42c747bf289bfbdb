"""`--dynamic_batch_size "1,2,4,8"`: one converted graph per batch size in one model file.

ATC converts the model once per batch size (every input's first dim set to it; the other dims
from `--input_shape` or the model). The file's main header is the largest batch's graph; its
`dynamic_batch` entry holds the sizes and, per smaller size, that graph's `inputs`, `outputs`,
`tensors`, `nodes` and `workspace_bytes` (validated at load like the main graph). Weights are
shared: a weight whose value differs between batch sizes (a folded Reshape target, say) is
stored once per size as "<name>@b<size>". The workspace is the largest of the graphs'.
`rt.Model.set_dynamic_batch_size(b)` / `acl.mdl.set_dynamic_batch_size` pick the graph.

`--dynamic_image_size` / `--dynamic_dims` (gears) generalise this: one graph per gear, the gear
with the most input elements as the main graph, the others under `dynamic_gears`.
`--input_shape` with ranges ("x:1~4,3,100~300,100~300", -1 = unbounded) is dynamic shape mode:
one main graph plus the ONNX graph itself, re-converted per concrete shape at execute
(rt/model/dynamic.py). See docs/dynamic-shapes.md.
"""
from __future__ import annotations

import math

import numpy as np

from ..graph.format import pack


def parse_sizes(spec, error) -> list[int]:
    """"1,2,4,8" or [1, 2, 4, 8] -> sorted distinct sizes >= 1 (ATC allows up to 100)."""
    try:
        sizes = [int(x) for x in (spec.split(",") if isinstance(spec, str) else spec)]
    except (TypeError, ValueError):
        raise error(f"atc: --dynamic_batch_size must look like \"1,2,4,8\", got {spec!r}") \
            from None
    if not sizes or len(sizes) > 100 or any(b < 1 for b in sizes) or \
            len(set(sizes)) != len(sizes):
        raise error(f"atc: --dynamic_batch_size must list 1 to 100 distinct sizes >= 1, "
                    f"got {spec!r}")
    return sorted(sizes)


def _onnx_model(model):
    import onnx
    return model if isinstance(model, onnx.ModelProto) else onnx.load(str(model))


def _build_at(model, soc_version, shapes: dict, build, insert_op_conf=None) -> tuple:
    """`build` (rt.atc.convert's passes, which edit the graph in place) on a copy of `model` at
    these static input shapes: (header, consts, summary)."""
    import onnx
    m = onnx.ModelProto()
    m.CopyFrom(model)
    return build(m, soc_version, shapes, insert_op_conf)


def _input_dims(model, shapes: dict, error) -> dict:
    model = _onnx_model(model)
    inits = {t.name for t in model.graph.initializer}
    dims = {}
    for vi in model.graph.input:
        if vi.name in inits:
            continue
        d = list(shapes.get(vi.name) or
                 [x.dim_value if x.HasField("dim_value") else -1
                  for x in vi.type.tensor_type.shape.dim])
        if not d:
            raise error(f"atc: --dynamic_batch_size needs every input to have a batch dim, "
                        f"got input {vi.name!r} with shape []")
        if any(x < 1 for x in d[1:]):
            raise error(f"atc: with --dynamic_batch_size only the batch dim may be dynamic; "
                        f"give input {vi.name!r}'s other dims with --input_shape, got {d}")
        dims[vi.name] = d
    return model, dims


def convert_dynamic_batch(model, soc_version, shapes, spec, build, AtcError,
                          insert_op_conf=None) -> tuple:
    """`build` and `AtcError` come from rt.atc.convert (which imports this module)."""
    sizes = parse_sizes(spec, AtcError)
    model, dims = _input_dims(model, shapes, AtcError)
    built = {b: _build_at(model, soc_version, {k: [b] + v[1:] for k, v in dims.items()}, build,
                          insert_op_conf) for b in sizes}
    summary = built[sizes[-1]][2]
    header, weights, variants = _merge(built, sizes[-1], "b")
    header["dynamic_batch"] = {"sizes": sizes, "variants": variants}
    data = pack(header, sorted(weights.items()))
    return data, dict(summary, bytes=len(data), dynamic_batch=sizes,
                      workspace_bytes=header["workspace_bytes"])


# ---- gears (--dynamic_image_size, --dynamic_dims) and ranges (--input_shape "x:1~4,...") -------

def parse_shape_spec(text, error) -> dict:
    """ATC's --input_shape with dynamic dims: "x:1,3,-1,-1;y:1~4,10" -> {"x": [1, 3, -1, -1],
    "y": [[1, 4], 10]}: an int >= 1 is static, -1 is dynamic (a gear dim, or unbounded in range
    mode), "lo~hi" a range (hi -1: unbounded)."""
    out = {}
    for part in (text or "").split(";"):
        if not part.strip():
            continue
        name, sep, dims = part.rpartition(":")
        try:
            if not sep or not name.strip():
                raise ValueError
            spec = []
            for tok in dims.split(","):
                lo, tilde, hi = tok.strip().partition("~")
                spec.append([int(lo), int(hi)] if tilde else int(lo))
        except ValueError:
            raise error(f"atc: --input_shape must look like \"name:1,3,224,224;name2:1,10\" (-1 "
                        f"or lo~hi for dynamic dims), got {part!r}") from None
        for d in spec:
            bad = (d[0] < 1 or (d[1] != -1 and d[1] < d[0])) if isinstance(d, list) else \
                (d < 1 and d != -1)
            if bad:
                raise error(f"atc: --input_shape dims must be >= 1, -1 or a range lo~hi with "
                            f"1 <= lo <= hi (hi -1: unbounded), got {part!r}")
        out[name.strip()] = spec
    return out


def has_ranges(spec: dict) -> bool:
    return any(isinstance(d, list) for dims in spec.values() for d in dims)


def is_static(spec: dict) -> bool:
    return all(isinstance(d, int) and d >= 1 for dims in spec.values() for d in dims)


def _parse_gears(text, option, width, error) -> list[list[int]]:
    """"224,224;448,448" -> [[224, 224], [448, 448]]: 2 to 100 distinct gears of `width` ints
    >= 1 (ATC's range for --dynamic_image_size and --dynamic_dims is (1, 100])."""
    try:
        gears = [[int(x) for x in g.split(",")] for g in str(text).split(";") if g.strip()]
    except ValueError:
        raise error(f"atc: {option} must look like \"224,224;448,448\" (gears separated by ';', "
                    f"values by ','), got {text!r}") from None
    if not 2 <= len(gears) <= 100 or len({tuple(g) for g in gears}) != len(gears):
        raise error(f"atc: {option} must list 2 to 100 distinct gears, got {text!r}")
    for g in gears:
        if len(g) != width or any(x < 1 for x in g):
            raise error(f"atc: each {option} gear must have {width} values >= 1 (one per -1 in "
                        f"--input_shape), got {g} in {text!r}")
    return gears


def _gear_shapes(spec, mode, text, input_format, error) -> tuple[list, list[dict]]:
    """(gears, [{input: static shape} per gear]) for --dynamic_image_size / --dynamic_dims."""
    option = "--dynamic_image_size" if mode == "image_size" else "--dynamic_dims"
    dynamic = [(name, i) for name, dims in spec.items() for i, d in enumerate(dims) if d == -1]
    if not dynamic:
        raise error(f"atc: {option} needs --input_shape with -1 for the dynamic dims, got "
                    f"{spec or None}")
    if mode == "image_size":
        fmt = input_format or "NCHW"
        if fmt not in ("NCHW", "NHWC"):
            raise error(f"atc: --input_format must be NCHW or NHWC with --dynamic_image_size, "
                        f"got {fmt!r}")
        hw = (2, 3) if fmt == "NCHW" else (1, 2)
        for name, dims in spec.items():
            if -1 in dims and (len(dims) != 4 or [i for i, d in enumerate(dims) if d == -1]
                               != list(hw)):
                raise error(f"atc: with --dynamic_image_size and --input_format {fmt}, input "
                            f"{name!r} must be 4-D with -1 exactly at H and W (dims {hw}), got "
                            f"{dims}")
        gears = _parse_gears(text, option, 2, error)
        shapes = [{n: [g[hw.index(i)] if d == -1 else d for i, d in enumerate(dims)]
                   for n, dims in spec.items()} for g in gears]
        return gears, shapes
    if (input_format or "ND") != "ND":
        raise error(f"atc: --input_format must be ND with --dynamic_dims, got {input_format!r}")
    gears = _parse_gears(text, option, len(dynamic), error)
    shapes = []
    for g in gears:
        it = iter(g)
        shapes.append({n: [next(it) if d == -1 else d for d in dims] for n, dims in spec.items()})
    return gears, shapes


def _merge(built: dict, main, tag: str) -> tuple[dict, dict, dict]:
    """One header + weights out of graphs built per key: the main graph's header holds the
    others as variants; a weight that differs from the main graph's is renamed name@<tag><key>."""
    header, consts, _ = built[main]
    weights = dict(consts)
    variants = {}
    for key, (h, cs, _) in built.items():
        if key == main:
            continue
        rename = {}
        for name, v in cs:
            if name in weights and weights[name].shape == v.shape and \
                    weights[name].dtype == v.dtype and np.array_equal(weights[name], v):
                continue
            rename[name] = f"{name}@{tag}{key}"
            weights[rename[name]] = v
        tensors = {rename.get(k, k): t for k, t in h["tensors"].items()}
        nodes = [dict(n, inputs=[rename.get(i, i) for i in n["inputs"]]) for n in h["nodes"]]
        variants[str(key)] = {"inputs": h["inputs"], "outputs": h["outputs"], "tensors": tensors,
                              "nodes": nodes, "workspace_bytes": h["workspace_bytes"]}
    for name, v in weights.items():       # every graph's weight tensors, in the main table
        header["tensors"].setdefault(name, {"kind": "weight", "shape": list(v.shape),
                                            "dtype": v.dtype.name})
    header["workspace_bytes"] = max(b[0]["workspace_bytes"] for b in built.values())
    return header, weights, variants


def convert_gears(model, soc_version, spec, mode, text, input_format, build, error) -> tuple:
    """--dynamic_image_size / --dynamic_dims: one graph per gear. The main graph is the gear
    with the most input elements (acl buffers are sized for it); header["dynamic_gears"] holds
    mode, format, the -1 spec, gears, per-gear input shapes and the other gears' graphs."""
    gears, shapes = _gear_shapes(spec, mode, text, input_format, error)
    model = _onnx_model(model)
    built = {i: _build_at(model, soc_version, s, build) for i, s in enumerate(shapes)}
    main = max(range(len(gears)), key=lambda i: (sum(math.prod(s) for s in shapes[i].values()),
                                                  -i))
    header, weights, variants = _merge(built, main, "g")
    header["dynamic_gears"] = {"mode": mode, "format": input_format or
                               ("NCHW" if mode == "image_size" else "ND"),
                               "input_shape": spec, "gears": gears, "shapes": shapes,
                               "main": main, "variants": variants}
    data = pack(header, sorted(weights.items()))
    return data, dict(built[main][2], bytes=len(data), dynamic_gears=gears,
                      workspace_bytes=header["workspace_bytes"])


def shape_at(spec: dict, upper: bool) -> dict:
    """Static shapes from a range spec: every range at its upper (or lower) bound; -1 and
    unbounded ranges at their lower bound (1)."""
    def pick(d):
        if isinstance(d, int):
            return 1 if d == -1 else d
        return d[1] if upper and d[1] != -1 else d[0]
    return {n: [pick(d) for d in dims] for n, dims in spec.items()}


def convert_ranges(model, soc_version, spec, build, error) -> tuple:
    """Dynamic shape mode (--input_shape with lo~hi or -1): the main graph is converted at the
    ranges' upper bounds when all are bounded (so query_size gives the largest plan), else at
    the lower bounds; the ONNX graph itself is embedded as the uint8 weight "::onnx_model"
    (protobuf data, parsed by the onnx package at execute to specialise per shape)."""
    model = _onnx_model(model)
    bounded = all(isinstance(d, int) and d >= 1 or isinstance(d, list) and d[1] != -1
                  for dims in spec.values() for d in dims)
    header, consts, summary = _build_at(model, soc_version, shape_at(spec, bounded), build)
    raw = np.frombuffer(model.SerializeToString(), np.uint8)
    ranges = {n: [[d, d] if isinstance(d, int) and d >= 1 else
                  ([1, -1] if isinstance(d, int) else d) for d in dims]
              for n, dims in spec.items()}
    header["dynamic_shape"] = {"ranges": ranges, "bounded": bounded, "graph": "::onnx_model",
                               "output_dims": _symbolic_output_dims(model, spec)}
    data = pack(header, sorted(consts) + [("::onnx_model", raw)])
    return data, dict(summary, bytes=len(data), dynamic_shape=ranges,
                      workspace_bytes=header["workspace_bytes"])


def _symbolic_output_dims(model, spec: dict) -> dict:
    """{output: dims, -1 where the dim varies with the input ranges}: ONNX shape inference with
    the dynamic input dims symbolic (what get_output_dims shows for a range model). An output
    whose shape inference cannot follow is left out (its main-graph dims are shown)."""
    import onnx
    m = onnx.ModelProto()
    m.CopyFrom(model)
    for vi in m.graph.input:
        if vi.name not in spec:
            continue
        shape = vi.type.tensor_type.shape
        del shape.dim[:]
        for k, d in enumerate(spec[vi.name]):
            fixed = d if isinstance(d, int) else (d[0] if d[0] == d[1] else -1)
            if fixed >= 1:
                shape.dim.add().dim_value = fixed
            else:
                shape.dim.add().dim_param = f"{vi.name}_dim{k}"
    del m.graph.value_info[:]
    for vi in m.graph.output:
        vi.type.tensor_type.ClearField("shape")
    try:
        m = onnx.shape_inference.infer_shapes(m, data_prop=True)
    except Exception:           # informative only: the main graph's dims remain
        return {}
    return {vi.name: [d.dim_value if d.HasField("dim_value") else -1
                      for d in vi.type.tensor_type.shape.dim]
            for vi in m.graph.output if vi.type.tensor_type.HasField("shape")}
