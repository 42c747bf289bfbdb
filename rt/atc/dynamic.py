"""`--dynamic_batch_size "1,2,4,8"`: one converted graph per batch size in one model file.

ATC converts the model once per batch size (every input's first dim set to it; the other dims
from `--input_shape` or the model). The file's main header is the largest batch's graph; its
`dynamic_batch` entry holds the sizes and, per smaller size, that graph's `inputs`, `outputs`,
`tensors`, `nodes` and `workspace_bytes` (validated at load like the main graph). Weights are
shared: a weight whose value differs between batch sizes (a folded Reshape target, say) is
stored once per size as "<name>@b<size>". The workspace is the largest of the graphs'.
`rt.Model.set_dynamic_batch_size(b)` / `acl.mdl.set_dynamic_batch_size` pick the graph.
"""
from __future__ import annotations

import numpy as np

from ..model.format import pack


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


def _input_dims(model, shapes: dict, error) -> dict:
    import onnx
    if not isinstance(model, onnx.ModelProto):
        model = onnx.load(str(model))
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
    import onnx
    sizes = parse_sizes(spec, AtcError)
    model, dims = _input_dims(model, shapes, AtcError)
    built = {}
    for b in sizes:
        m = onnx.ModelProto()
        m.CopyFrom(model)
        built[b] = build(m, soc_version, {k: [b] + v[1:] for k, v in dims.items()},
                         insert_op_conf)
    top = sizes[-1]
    header, consts, summary = built[top]
    weights = dict(consts)
    variants = {}
    for b in sizes[:-1]:
        h, cs, _ = built[b]
        rename = {}
        for name, v in cs:
            if name in weights and weights[name].shape == v.shape and \
                    weights[name].dtype == v.dtype and np.array_equal(weights[name], v):
                continue
            rename[name] = f"{name}@b{b}"
            weights[rename[name]] = v
        tensors = {rename.get(k, k): t for k, t in h["tensors"].items()}
        nodes = [dict(n, inputs=[rename.get(i, i) for i in n["inputs"]]) for n in h["nodes"]]
        variants[str(b)] = {"inputs": h["inputs"], "outputs": h["outputs"], "tensors": tensors,
                            "nodes": nodes, "workspace_bytes": h["workspace_bytes"]}
    for name, v in weights.items():       # every graph's weight tensors, in the main table
        header["tensors"].setdefault(name, {"kind": "weight", "shape": list(v.shape),
                                            "dtype": v.dtype.name})
    header["workspace_bytes"] = max(built[b][0]["workspace_bytes"] for b in sizes)
    header["dynamic_batch"] = {"sizes": sizes, "variants": variants}
    data = pack(header, sorted(weights.items()))
    return data, dict(summary, bytes=len(data), dynamic_batch=sizes,
                      workspace_bytes=header["workspace_bytes"])
