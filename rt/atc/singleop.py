"""Single-op models: `python -m rt.atc --singleop ops.json --output dir --soc_version ...`.

CANN's `atc --singleop` compiles each operator of a JSON list into its own model file, which
`aclopSetModelDir` loads and `aclopExecuteV2` finds by op type, input/output descriptions and
attributes. The JSON is CANN's single-op format::

    [{"op": "Add",
      "input_desc": [{"format": "ND", "shape": [8, 16], "type": "float32"}, ...],
      "output_desc": [{"format": "ND", "shape": [8, 16], "type": "float32"}],
      "attr": [{"name": "transpose_x1", "type": "bool", "value": false}]}, ...]

Our model file (one per op, ``<index>_<op>_<digest>.json``) is plain JSON, never pickle: format
name, version, soc_version, op type, the descs and the attributes with every default filled in
(so execution matches attributes by value). This module also holds the op catalogue: which ops
exist, their attributes and defaults, output shape inference (compile-time checks) and the numpy
reference each op has (the AI CPU fallback of `acl.op.execute_v2`).
"""
from __future__ import annotations

import hashlib
import json
import math
import os
import re
import stat

import numpy as np

from ..soc import SOCS
from . import singleop_catalog
from .singleop_catalog import OpDef, SingleOpError

FORMAT_NAME = "ascend-emu-singleop"
FORMAT_VERSION = 1

#: CANN's type strings of the single-op JSON -> numpy dtype names
TYPES = {"float16": "float16", "float": "float32", "float32": "float32", "double": "float64",
         "float64": "float64",
         "int8": "int8", "int16": "int16", "int32": "int32", "int64": "int64", "uint8": "uint8",
         "uint16": "uint16", "uint32": "uint32", "uint64": "uint64", "bool": "bool"}
#: plain (ND-like) formats; the private 5-D/fractal formats need layouts our kernels do not take
FORMATS = ("ND", "NCHW", "NHWC", "HWCN", "NDHWC", "NCDHW")
ATTR_TYPES = ("bool", "int", "float", "string", "list_bool", "list_int", "list_float",
              "list_string")


def _same_dtype(op, ins):
    if len({d for _, d in ins}) != 1:
        raise SingleOpError(f"{op}: inputs must share one dtype, got {[d for _, d in ins]}")
    return ins[0][1]


def _broadcast(op):
    def infer(ins, attrs):
        dt = _same_dtype(op, ins)
        try:
            return [(tuple(np.broadcast_shapes(*[s for s, _ in ins])), dt)]
        except ValueError:
            raise SingleOpError(f"{op}: input shapes must broadcast, got "
                                f"{[list(s) for s, _ in ins]}") from None
    return infer


def _matmul_infer(ins, attrs):
    (a, adt), (b, bdt) = ins[:2]
    if len(a) != 2 or len(b) != 2:
        raise SingleOpError(f"MatMul: x1 and x2 must be 2-D (BatchMatMul is not supported), got "
                            f"{list(a)} and {list(b)}")
    m, k = (a[1], a[0]) if attrs["transpose_x1"] else a
    k2, n = (b[1], b[0]) if attrs["transpose_x2"] else b
    if k != k2:
        raise SingleOpError(f"MatMul: the reduced dimensions must match, got x1 {list(a)} "
                            f"(transpose_x1={attrs['transpose_x1']}) and x2 {list(b)} "
                            f"(transpose_x2={attrs['transpose_x2']})")
    if len(ins) == 3 and tuple(ins[2][0]) not in ((n,), (1, n)):
        raise SingleOpError(f"MatMul: bias must have shape [{n}], got {list(ins[2][0])}")
    return [((m, n), _same_dtype("MatMul", ins[:2]))]


def _matmul_ref(attrs, a, b, bias=None):
    a = a.T if attrs["transpose_x1"] else a
    b = b.T if attrs["transpose_x2"] else b
    out = np.matmul(a.astype(np.float32), b.astype(np.float32))
    if bias is not None:
        out = out + bias.reshape(-1).astype(np.float32)
    return [out]


def _softmax_infer(ins, attrs):
    shape, dt = ins[0]
    for ax in attrs["axes"]:
        if not -len(shape) <= ax < max(len(shape), 1):
            raise SingleOpError(f"SoftmaxV2: axes must be in [{-len(shape)}, {len(shape)}), got "
                                f"axes={attrs['axes']}")
    return [(tuple(shape), dt)]


def _softmax_ref(attrs, x):
    axes = tuple(attrs["axes"])
    x32 = x.astype(np.float32)
    e = np.exp(x32 - x32.max(axis=axes, keepdims=True))
    return [e / e.sum(axis=axes, keepdims=True)]


def _norm_axis(attrs, rank, name):
    ax = attrs[name]
    if not -rank <= ax < rank:
        raise SingleOpError(f"LayerNorm: {name} must be in [{-rank}, {rank}), got {name}={ax}")
    return ax % rank


def _layernorm_infer(ins, attrs):
    (x, dt), (g, _), (b, _) = ins
    ax = _norm_axis(attrs, len(x), "begin_norm_axis")
    pax = _norm_axis(attrs, len(x), "begin_params_axis")
    want = tuple(x[pax:])
    if tuple(g) != want or tuple(b) != want:
        raise SingleOpError(f"LayerNorm: gamma and beta must have shape {list(want)} (x's dims "
                            f"from begin_params_axis={attrs['begin_params_axis']}), got "
                            f"{list(g)} and {list(b)}")
    stat = tuple(x[:ax]) + (1,) * (len(x) - ax)
    return [(tuple(x), _same_dtype("LayerNorm", ins)), (stat, dt), (stat, dt)]


def _layernorm_ref(attrs, x, gamma, beta):
    ax = attrs["begin_norm_axis"] % x.ndim
    axes = tuple(range(ax, x.ndim))
    x32 = x.astype(np.float32)
    mean = x32.mean(axis=axes, keepdims=True)
    var = ((x32 - mean) ** 2).mean(axis=axes, keepdims=True)
    y = (x32 - mean) / np.sqrt(var + attrs["epsilon"]) * gamma.astype(np.float32) + \
        beta.astype(np.float32)
    return [y, mean, var]


_MATMUL_ATTRS = {"transpose_x1": ("bool", False), "transpose_x2": ("bool", False)}
_SOFTMAX_ATTRS = {"axes": ("list_int", [-1])}

#: CANN op type -> definition (the ops the kernel library runs; acl.op.execute_v2 maps them)
OPS = {
    "Add": OpDef((2, 2), 1, {}, _broadcast("Add"), lambda a, x, y: [x + y]),
    "Sub": OpDef((2, 2), 1, {}, _broadcast("Sub"), lambda a, x, y: [x - y]),
    "Mul": OpDef((2, 2), 1, {}, _broadcast("Mul"), lambda a, x, y: [x * y]),
    "Relu": OpDef((1, 1), 1, {}, lambda ins, a: [ins[0]],
                  lambda a, x: [np.maximum(x, np.zeros((), x.dtype))]),
    "MatMul": OpDef((2, 3), 1, _MATMUL_ATTRS, _matmul_infer, _matmul_ref),
    "MatMulV2": OpDef((2, 3), 1, _MATMUL_ATTRS, _matmul_infer, _matmul_ref),
    "SoftmaxV2": OpDef((1, 1), 1, _SOFTMAX_ATTRS, _softmax_infer, _softmax_ref),
    "Softmax": OpDef((1, 1), 1, _SOFTMAX_ATTRS, _softmax_infer, _softmax_ref),
    "LayerNorm": OpDef((3, 3), 3, {"begin_norm_axis": ("int", 0),
                                   "begin_params_axis": ("int", 0),
                                   "epsilon": ("float", 1e-7)},
                       _layernorm_infer, _layernorm_ref),
    **singleop_catalog.OPS,
}


def check_attr_value(op: str, name: str, typ: str, value):
    """`value` normalised for attribute `name` of type `typ` (JSON-able), or SingleOpError."""
    scalar = {"bool": bool, "int": int, "float": (int, float), "string": str}
    base = typ[5:] if typ.startswith("list_") else typ
    if typ not in ATTR_TYPES:
        raise SingleOpError(f"{op}: attr {name!r} type must be one of {list(ATTR_TYPES)}, got "
                            f"type={typ!r}")
    items = value if typ.startswith("list_") else [value]
    if typ.startswith("list_") and not isinstance(value, (list, tuple)):
        raise SingleOpError(f"{op}: attr {name!r} ({typ}) must be a list, got value={value!r}")
    for v in items:
        ok = isinstance(v, scalar[base]) and (base == "bool" or not isinstance(v, bool))
        if not ok:
            raise SingleOpError(f"{op}: attr {name!r} ({typ}) must hold {base} values, got "
                                f"value={value!r}")
    conv = {"bool": bool, "int": int, "float": float, "string": str}[base]
    return [conv(v) for v in items] if typ.startswith("list_") else conv(value)


def full_attrs(op: str, given: dict) -> dict:
    """The op's attributes with defaults filled in; `given` maps name -> (type, value)."""
    spec = OPS[op].attrs
    unknown = sorted(set(given) - set(spec))
    if unknown:
        raise SingleOpError(f"{op}: attr names must be among {sorted(spec)}, got {unknown}")
    out = {}
    for name, (typ, default) in spec.items():
        if name in given:
            gtyp, value = given[name]
            if gtyp != typ:
                raise SingleOpError(f"{op}: attr {name!r} must have type {typ!r}, got "
                                    f"type={gtyp!r}")
            out[name] = check_attr_value(op, name, typ, value)
        else:
            out[name] = default
    return out


def _desc(op: str, where: str, d) -> dict:
    if not isinstance(d, dict):
        raise SingleOpError(f"{op}: {where} must be an object with format, shape, type, got {d!r}")
    typ, fmt, shape = d.get("type"), d.get("format", "ND"), d.get("shape")
    if typ not in TYPES:
        raise SingleOpError(f"{op}: {where} type must be one of {sorted(TYPES)}, got type={typ!r}")
    if fmt not in FORMATS:
        raise SingleOpError(f"{op}: {where} format must be one of {list(FORMATS)}, got "
                            f"format={fmt!r}")
    if not isinstance(shape, list) or not all(isinstance(s, int) and not isinstance(s, bool)
                                              and s >= 0 for s in shape):
        raise SingleOpError(f"{op}: {where} shape must be a list of ints >= 0 (dynamic shapes, "
                            f"-1, are not supported), got shape={shape!r}")
    out = {"type": TYPES[typ], "format": fmt, "shape": shape}
    if d.get("is_const"):       # a value the op's shape inference reads (Slice's offsets, ...)
        try:
            value = np.asarray(d.get("const_value"), dtype=out["type"])
        except (TypeError, ValueError, OverflowError):
            value = None
        if value is None or value.size != math.prod(shape) or value.dtype.kind not in "iuf":
            raise SingleOpError(f"{op}: {where} const_value must hold {math.prod(shape)} "
                                f"{out['type']} numbers (is_const), got "
                                f"const_value={d.get('const_value')!r}")
        out.update(is_const=True, const_value=value.reshape(-1).tolist())
    return out


def const_of(desc: dict):
    """The const value of an input desc (numpy, its shape), or None."""
    if "const_value" not in desc:
        return None
    return np.asarray(desc["const_value"], dtype=desc["type"]).reshape(desc["shape"])


def compile_op(entry, index: int = 0) -> dict:
    """The single-op model (a JSON-able dict) of one entry of the single-op JSON."""
    if not isinstance(entry, dict) or "op" not in entry:
        raise SingleOpError(f"singleop entry {index} must be an object with an \"op\" field, got "
                            f"{entry!r}")
    op = entry["op"]
    if op not in OPS:
        raise SingleOpError(f"entry {index}: op must be one of {sorted(OPS)}, got op={op!r}")
    d = OPS[op]
    ins = [_desc(op, f"input_desc[{i}]", x) for i, x in enumerate(entry.get("input_desc", []))]
    outs = [_desc(op, f"output_desc[{i}]", x) for i, x in enumerate(entry.get("output_desc", []))]
    if not d.inputs[0] <= len(ins) <= d.inputs[1]:
        raise SingleOpError(f"{op}: input_desc must have {d.inputs[0]}..{d.inputs[1]} entries, "
                            f"got {len(ins)}")
    if len(outs) != d.outputs:
        raise SingleOpError(f"{op}: output_desc must have {d.outputs} entries, got {len(outs)}")
    given = {}
    for a in entry.get("attr", []):
        if not isinstance(a, dict) or not {"name", "type", "value"} <= set(a):
            raise SingleOpError(f"{op}: attr entries must have name, type, value, got {a!r}")
        given[a["name"]] = (a["type"], a["value"])
    attrs = full_attrs(op, given)
    specs = [(tuple(x["shape"]), x["type"]) for x in ins]
    inferred = d.infer(specs, attrs, [const_of(x) for x in ins]) if d.const_inputs else \
        d.infer(specs, attrs)
    for i, ((shape, dt), o) in enumerate(zip(inferred, outs)):
        if shape is None:           # known when the op runs (a non-const shape input)
            shape = o["shape"]
        # the same shape up to dimensions of 1 (a scalar declared [1], as Ascend/samples'
        # ArgMaxV2 op list does and CANN's ATC takes): the op writes it in the declared shape
        same = [v for v in o["shape"] if v != 1] == [v for v in shape if v != 1]
        if not same or o["type"] != dt:
            raise SingleOpError(f"{op}: output_desc[{i}] must be {dt}{list(shape)} (dimensions "
                                f"of 1 aside) for these inputs and attrs, got "
                                f"{o['type']}{o['shape']}")
    return {"format": FORMAT_NAME, "version": FORMAT_VERSION, "op": op, "inputs": ins,
            "outputs": outs, "attrs": attrs}


def compile_singleop(json_path: str, output_dir: str, soc_version: str) -> list[str]:
    """Compile every op of the single-op JSON file into `output_dir`; returns the paths written.
    Nothing is written if any entry is refused."""
    if soc_version not in SOCS:
        raise SingleOpError(f"atc: --soc_version must be one of {sorted(SOCS)}, got "
                            f"{soc_version!r}")
    try:
        entries = _read_json(json_path)
    except OSError as e:
        raise SingleOpError(f"atc: --singleop must name a readable file, got {json_path!r} "
                            f"({e.strerror or e})") from None
    except ValueError as e:     # JSON, UTF-8, size, nesting
        raise SingleOpError(f"atc: --singleop file {json_path!r} must be JSON: {e}") from None
    if isinstance(entries, dict):
        entries = [entries]
    if not isinstance(entries, list) or not entries:
        raise SingleOpError(f"atc: --singleop file {json_path!r} must hold a non-empty list of "
                            f"ops")
    models = []
    for i, e in enumerate(entries):
        m = compile_op(e, i)
        m["soc_version"] = soc_version
        models.append(m)
    os.makedirs(output_dir, exist_ok=True)
    paths = []
    for i, m in enumerate(models):
        text = json.dumps(m, sort_keys=True)
        digest = hashlib.sha256(text.encode()).hexdigest()[:16]
        path = os.path.join(output_dir, f"{i}_{m['op']}_{digest}.json")
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        paths.append(path)
    return paths


#: the largest single-op JSON file read (a definition list or a compiled op model)
MAX_JSON_BYTES = 16 << 20


def _read_json(path: str):
    """The JSON value in the regular file `path`, read only if it is at most MAX_JSON_BYTES:
    ValueError for another kind of file (a device such as /dev/zero), a bigger one, bytes that are
    not UTF-8, text that is not JSON or nesting too deep to parse; OSError if unreadable."""
    st = os.stat(path)
    if not stat.S_ISREG(st.st_mode):
        raise ValueError(f"it must be a regular file, got mode {stat.filemode(st.st_mode)}")
    if st.st_size > MAX_JSON_BYTES:
        raise ValueError(f"it must be at most {MAX_JSON_BYTES} bytes, got {st.st_size}")
    with open(path, "rb") as f:
        data = f.read(MAX_JSON_BYTES + 1)
    if len(data) > MAX_JSON_BYTES:
        raise ValueError(f"it must be at most {MAX_JSON_BYTES} bytes, got more")
    try:
        return json.loads(data.decode("utf-8"))
    except RecursionError:
        raise ValueError("it must be nested at most as deep as the JSON parser reads, got "
                         "deeper nesting") from None


def is_model_file(path: str) -> bool:
    """Whether `path` is a single-op model file (what `acl.op.set_model_dir` loads): named as
    ATC names them (``<index>_<op>...``) or a JSON object naming our format. Other files in the
    folder (the op_list.json a sample compiled from, configs) are not models."""
    if re.match(r"\d+_[A-Za-z]", os.path.basename(path)):
        return True
    try:
        with open(path, encoding="utf-8") as f:
            head = f.read(1 << 20)
    except (OSError, UnicodeDecodeError):
        return False
    return f'"format": "{FORMAT_NAME}"' in head


def read_model(path: str) -> dict:
    """A single-op model file, checked (SingleOpError says what is wrong)."""
    try:
        m = _read_json(path)
    except (OSError, ValueError) as e:
        raise SingleOpError(f"single-op model {path!r} must be a readable JSON file: {e}") \
            from None
    if not isinstance(m, dict) or m.get("format") != FORMAT_NAME:
        raise SingleOpError(f"single-op model {path!r} must have format {FORMAT_NAME!r} (written "
                            f"by python -m rt.atc --singleop)")
    if m.get("version") != FORMAT_VERSION:
        raise SingleOpError(f"single-op model {path!r} must have version {FORMAT_VERSION}, got "
                            f"version={m.get('version')!r}")
    try:    # re-validate: a hand-edited file must not smuggle in an unchecked op
        again = compile_op({"op": m["op"], "input_desc": m["inputs"], "output_desc": m["outputs"],
                            "attr": [{"name": k, "type": OPS[m["op"]].attrs[k][0], "value": v}
                                     for k, v in m["attrs"].items()]})
    except (KeyError, TypeError, AttributeError) as e:
        raise SingleOpError(f"single-op model {path!r} is malformed (missing {e})") from None
    again["soc_version"] = m.get("soc_version")
    return again


def nbytes(desc: dict) -> int:
    return math.prod(desc["shape"]) * np.dtype(desc["type"]).itemsize


def main(args) -> int:
    """The --singleop branch of `python -m rt.atc` (args: the parsed command line)."""
    import sys
    try:
        paths = compile_singleop(args.singleop, args.output, args.soc_version)
    except SingleOpError as e:
        print(f"ATC run failed: {e}", file=sys.stderr)
        return 1
    print(f"ATC run success: {len(paths)} single-op model(s) in {args.output}")
    for p in paths:
        print(f"  {os.path.basename(p)}")
    return 0
