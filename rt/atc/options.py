"""ATC's graph options, as graph edits on rt.atc.convert's Graph:

- ``--out_nodes "node:0;node2:1"``: the graph outputs become these node outputs, in this order;
- ``--input_fp16_nodes "x;y"``: these float inputs are fed as float16 (a Cast to the model's
  dtype is the first node reading each);
- ``--output_type FP16`` (every output) or ``"node:0:FP16;node2:1:UINT8"`` (per output): a Cast
  in front of the output;
- ``--precision_mode``: with force_fp16 / allow_fp32_to_fp16 / allow_mix_precision(_fp16) the
  cube ops (Conv, ConvTranspose, MatMul, Gemm) see float32 operands rounded to float16 and
  write a result rounded to float16 (the cube accumulates in float32, as L0C does);
  cube_fp16in_fp32out rounds the operands only; force_fp32 and must_keep_origin_dtype keep
  float32. The bfloat16 modes are refused (no bfloat16 tensors here).
"""
from __future__ import annotations

import numpy as np

#: ONNX TensorProto element types of the ATC type names
OUTPUT_TYPES = {"FP32": (1, "float32"), "FP16": (10, "float16"), "UINT8": (2, "uint8")}
PRECISION_MODES = ("force_fp16", "allow_fp32_to_fp16", "allow_mix_precision",
                   "allow_mix_precision_fp16", "cube_fp16in_fp32out", "force_fp32",
                   "must_keep_origin_dtype")
BF16_MODES = ("allow_mix_precision_bf16", "allow_fp32_to_bf16")
CUBE_OPS = ("Conv", "ConvTranspose", "MatMul", "Gemm")


def _node_port(text: str, option: str, error, with_type=False) -> list:
    out = []
    for item in filter(None, (s.strip() for s in text.split(";"))):
        parts = item.rsplit(":", 2 if with_type else 1)
        want = 3 if with_type else 2
        if len(parts) != want or not parts[1].strip().isdigit():
            form = "node:index:type" if with_type else "node:index"
            raise error(f"atc: {option} entries must be {form}, got {item!r}")
        out.append((parts[0].strip(), int(parts[1])) + ((parts[2].strip(),) if with_type
                                                         else ()))
    if not out:
        raise error(f"atc: {option} must name at least one node output, got {text!r}")
    return out


def _node_output(g, node: str, port: int, option: str, error) -> str:
    for n in g.nodes:
        if n["name"] == node:
            if port >= len(n["outputs"]) or not n["outputs"][port]:
                raise error(f"atc: {option}: node {node!r} ({n['op']}) has "
                            f"{len(n['outputs'])} output(s), got index {port}")
            return n["outputs"][port]
    raise error(f"atc: {option}: node {node!r} is not in the graph")


def apply_out_nodes(g, text: str | None, error) -> None:
    """--out_nodes: before the passes, so folding and dead-node removal see the new outputs."""
    if not text:
        return
    names = [_node_output(g, n, p, "--out_nodes", error)
             for n, p in _node_port(text, "--out_nodes", error)]
    for name in names:
        if name not in g.specs:
            raise error(f"atc: --out_nodes: the shape of {name!r} is unknown after shape "
                        f"inference")
    g.outputs = list(dict.fromkeys(names))


def _rename_reads(g, old: str, new: str) -> None:
    for n in g.nodes:
        n["inputs"] = [new if i == old else i for i in n["inputs"]]


def _cast_node(name: str, src: str, dst: str, to: int) -> dict:
    return {"name": name, "op": "Cast", "attrs": {"to": to}, "inputs": [src], "outputs": [dst]}


def apply_input_fp16_nodes(g, text: str | None, error) -> list[str]:
    """--input_fp16_nodes: after AIPP (an AIPP input takes uint8 images and is refused)."""
    if not text:
        return []
    names = [s.strip() for s in text.split(";") if s.strip()]
    for name in names:
        if name not in g.inputs:
            raise error(f"atc: --input_fp16_nodes names must be model inputs {g.inputs}, got "
                        f"{name!r}")
        shape, dt = g.specs[name]
        if dt not in ("float32", "float16"):
            raise error(f"atc: --input_fp16_nodes input {name!r} must be float32 (got {dt}"
                        f"{'; it takes AIPP images' if dt == 'uint8' else ''})")
        if dt == "float16":
            continue
        inner = name + "::fp32"
        _rename_reads(g, name, inner)
        g.outputs = [inner if o == name else o for o in g.outputs]
        g.specs[inner] = (shape, dt)
        g.specs[name] = (shape, "float16")
        g.nodes.insert(0, _cast_node(name + "::input_fp16", name, inner, 1))
    return names


def _output_types(g, text: str, error) -> dict:
    """{graph output: ATC type name}."""
    if ":" not in text:
        t = text.strip().upper()
        if t not in OUTPUT_TYPES:
            raise error(f"atc: --output_type must be one of {sorted(OUTPUT_TYPES)} (or "
                        f"node:index:type;...), got {text!r}")
        return {o: t for o in g.outputs}
    out = {}
    for node, port, t in _node_port(text, "--output_type", error, with_type=True):
        name = _node_output(g, node, port, "--output_type", error)
        if name not in g.outputs:
            raise error(f"atc: --output_type: {node}:{port} must be a model output "
                        f"(--out_nodes or the graph's outputs), got {name!r}")
        if t.upper() not in OUTPUT_TYPES:
            raise error(f"atc: --output_type type must be one of {sorted(OUTPUT_TYPES)}, got "
                        f"{t!r} for {node}:{port}")
        out[name] = t.upper()
    return out


def apply_output_type(g, text: str | None, error) -> dict:
    """--output_type: after every pass; each output produced by a node here."""
    if not text:
        return {}
    types = _output_types(g, text, error)
    for name, t in types.items():
        to, dt = OUTPUT_TYPES[t]
        shape, cur = g.specs[name]
        if cur == dt:
            continue
        inner = name + "::pre_cast"
        for n in g.nodes:
            n["outputs"] = [inner if o == name else o for o in n["outputs"]]
        _rename_reads(g, name, inner)
        g.specs[inner] = (shape, cur)
        g.specs[name] = (shape, dt)
        g.nodes.append(_cast_node(name + "::output_type", inner, name, to))
    return types


def check_precision_mode(mode: str | None, error) -> None:
    if mode is None or mode in PRECISION_MODES:
        return
    if mode in BF16_MODES:
        raise error(f"atc: not supported: --precision_mode={mode} (no bfloat16 tensors in "
                    f"ascend-emu models)")
    raise error(f"atc: --precision_mode must be one of {list(PRECISION_MODES + BF16_MODES)}, "
                f"got {mode!r}")


def apply_precision_mode(g, mode: str | None, error) -> int:
    """Round the float32 operands (and results) of the cube ops through float16. Returns the
    number of cube ops rounded."""
    check_precision_mode(mode, error)
    if mode in (None, "force_fp32", "must_keep_origin_dtype"):
        return 0
    round_out = mode != "cube_fp16in_fp32out"
    nodes, count = [], 0
    for n in g.nodes:
        if n["op"] not in CUBE_OPS:
            nodes.append(n)
            continue
        ins = []
        for k, i in enumerate(n["inputs"]):
            if not i:
                ins.append(i)
            elif i in g.consts and g.consts[i].dtype == np.float32:
                rounded = f"{i}::fp16"
                g.consts.setdefault(rounded, g.consts[i].astype(np.float16).astype(np.float32))
                ins.append(rounded)
            elif i in g.specs and g.specs[i][1] == "float32":
                ins.append(_round_through_fp16(g, nodes, i, f"{n['name']}::in{k}"))
            else:
                ins.append(i)
        out = n["outputs"][0]
        rounded = round_out and g.specs.get(out, (None, None))[1] == "float32"
        if rounded:
            raw = out + "::fp32acc"
            g.specs[raw] = g.specs[out]
            n = dict(n, outputs=[raw] + n["outputs"][1:])
        nodes.append(dict(n, inputs=ins))
        if rounded:
            half = out + "::fp16"
            g.specs[half] = (g.specs[out][0], "float16")
            nodes.append(_cast_node(f"{n['name']}::out_fp16", raw, half, 10))
            nodes.append(_cast_node(f"{n['name']}::out_fp32", half, out, 1))
        count += 1
    g.nodes = nodes
    return count


def _round_through_fp16(g, nodes: list, name: str, tag: str) -> str:
    shape = g.specs[name][0]
    half, back = f"{tag}::fp16", f"{tag}::fp16r"
    g.specs[half] = (shape, "float16")
    g.specs[back] = (shape, "float32")
    nodes.append(_cast_node(f"{tag}::to_fp16", name, half, 10))
    nodes.append(_cast_node(f"{tag}::to_fp32", half, back, 1))
    return back
