"""The offline-model file (`.om` here): a versioned, safe container written by `python -m rt.atc`.

Layout (all integers little-endian; nothing in it is executed or unpickled on load):

    offset  size  field
    0       8     magic b"AEMUOM\\x00\\x01"
    8       4     format version (uint32), FORMAT_VERSION
    12      4     flags (uint32), 0
    16      8     header length H in bytes (uint64): UTF-8 JSON
    24      8     weight blob length W in bytes (uint64)
    32      32    SHA-256 of the JSON header bytes followed by the weight blob
    64      H     JSON header (see docs/models.md: inputs, outputs, tensors, nodes, weights, plan)
    64+H'   W     weight blob: raw little-endian arrays, each 64-byte aligned
                  (H' = H rounded up to 64; the gap is zero bytes)

The file size must be exactly 64 + H' + W. `parse` refuses anything else with ACL's model codes:
unreadable -> ACL_ERROR_READ_MODEL_FAILURE, wrong magic or version -> ACL_ERROR_PARSE_MODEL,
wrong size (truncated, trailing bytes) -> ACL_ERROR_MODEL_SIZE_INVALID, checksum or schema
mismatch -> ACL_ERROR_DESERIALIZE_MODEL.

Version 1 stays: the dynamic-shape keys (`dynamic_batch`, `dynamic_gears`, `dynamic_shape`,
docs/dynamic-shapes.md) are optional additions, so every file written before them loads as it
did; a file that uses them is checked here like the main graph.
"""
from __future__ import annotations

import hashlib
import json
import math
import struct

import numpy as np

from ..errors import (AclError, ACL_ERROR_DESERIALIZE_MODEL, ACL_ERROR_MODEL_SIZE_INVALID,
                      ACL_ERROR_PARSE_MODEL, ACL_ERROR_READ_MODEL_FAILURE)
from ..soc import SOCS

MAGIC = b"AEMUOM\x00\x01"
FORMAT_VERSION = 1
PREAMBLE = struct.Struct("<8sIIQQ32s")          # 64 bytes
ALIGN = 64
DTYPES = ("float32", "float16", "float64", "int64", "int32", "int16", "int8", "uint64", "uint32",
          "uint16", "uint8", "bool")
# no tensor of a model may be larger than the largest device memory of any SoC: a header claiming
# more (2^124 elements, or a product that overflows int64) is refused before anything is sized
MAX_TENSOR_BYTES = max(s.hbm_bytes for s in SOCS.values())


def align(n: int, a: int = ALIGN) -> int:
    return -(-n // a) * a


def pack(header: dict, weights: list[tuple[str, np.ndarray]]) -> bytes:
    """Serialise a model: `header` (JSON-able; its "weights" table is filled here) and the named
    weight arrays. Returns the file's bytes."""
    blob = bytearray()
    table = []
    for name, arr in weights:
        a = np.ascontiguousarray(arr)
        if a.dtype.name not in DTYPES:
            raise ValueError(f"atc: weight {name!r} has dtype {a.dtype}, which the model format "
                             f"does not store (one of {DTYPES})")
        a = a.astype(a.dtype.newbyteorder("<"), copy=False)
        off = align(len(blob))
        blob.extend(b"\0" * (off - len(blob)))
        blob.extend(a.tobytes())
        table.append({"name": name, "dtype": a.dtype.name, "shape": list(a.shape),
                      "offset": off, "nbytes": a.nbytes})
    header = dict(header, weights=table, weight_bytes=align(len(blob)))
    hbytes = json.dumps(header, sort_keys=True, separators=(",", ":")).encode()
    pad = align(len(hbytes)) - len(hbytes)
    digest = hashlib.sha256(hbytes + bytes(blob)).digest()
    pre = PREAMBLE.pack(MAGIC, FORMAT_VERSION, 0, len(hbytes), len(blob), digest)
    return pre + hbytes + b"\0" * pad + bytes(blob)


def read_file(path) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as e:
        raise AclError(ACL_ERROR_READ_MODEL_FAILURE,
                       f"load model: cannot read model file {str(path)!r}: {e.strerror or e}")


def _fail(code: int, what: str, where: str):
    raise AclError(code, f"load model {where}: {what}")


def parse(data: bytes, where: str = "<memory>") -> tuple[dict, memoryview]:
    """(header, weight blob) of a model file's bytes, after checking magic, version, sizes,
    checksum and the header's schema."""
    data = bytes(data)
    if len(data) < PREAMBLE.size:
        _fail(ACL_ERROR_MODEL_SIZE_INVALID, f"file is {len(data)} bytes, shorter than the "
              f"{PREAMBLE.size}-byte preamble (truncated, or not a model file)", where)
    magic, version, _flags, hlen, wlen, digest = PREAMBLE.unpack_from(data)
    if magic != MAGIC:
        _fail(ACL_ERROR_PARSE_MODEL, f"magic must be {MAGIC!r} (an ascend-emu offline model "
              f"written by python -m rt.atc), got {magic!r}", where)
    if version != FORMAT_VERSION:
        _fail(ACL_ERROR_PARSE_MODEL, f"format version must be {FORMAT_VERSION}, got version="
              f"{version}; convert the model again with this release's python -m rt.atc", where)
    want = PREAMBLE.size + align(hlen) + wlen
    if len(data) != want:
        state = "truncated" if len(data) < want else "has trailing bytes"
        _fail(ACL_ERROR_MODEL_SIZE_INVALID, f"file size must be {want} bytes (64 + header "
              f"{hlen} + weights {wlen}), got {len(data)}: the file is {state}", where)
    hbytes = data[PREAMBLE.size:PREAMBLE.size + hlen]
    blob = memoryview(data)[PREAMBLE.size + align(hlen):]
    if hashlib.sha256(hbytes + bytes(blob)).digest() != digest:
        _fail(ACL_ERROR_DESERIALIZE_MODEL, "SHA-256 checksum of header + weights does not match "
              "the preamble: the file is corrupt", where)
    try:
        header = json.loads(hbytes.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        _fail(ACL_ERROR_DESERIALIZE_MODEL, f"header must be UTF-8 JSON, got {e}", where)
    except RecursionError:
        _fail(ACL_ERROR_DESERIALIZE_MODEL, "header must be UTF-8 JSON of bounded depth, got "
              "nesting too deep to read", where)
    try:
        validate(header, len(blob), where)
    except AclError:
        raise
    except (TypeError, ValueError, KeyError, IndexError, OverflowError, RecursionError,
            AttributeError) as e:         # a header that lies in a way no rule names
        _fail(ACL_ERROR_DESERIALIZE_MODEL, f"header must follow the model schema, got "
              f"{type(e).__name__}: {e}", where)
    return header, blob


def _need(cond: bool, what: str, where: str) -> None:
    if not cond:
        _fail(ACL_ERROR_DESERIALIZE_MODEL, f"header: {what}", where)


def _is_shape(s) -> bool:
    return isinstance(s, list) and all(isinstance(d, int) and d >= 0 for d in s)


def _nbytes(kind: str, name, entry: dict, where: str) -> int:
    """Bytes of a weight or tensor entry (dtype and shape already checked), exact and bounded."""
    n = math.prod(entry["shape"]) * np.dtype(entry["dtype"]).itemsize
    _need(n <= MAX_TENSOR_BYTES, f"{kind} {name!r} must fit in {MAX_TENSOR_BYTES} bytes (the "
          f"largest device memory), got shape={entry['shape']} ({n} bytes)", where)
    return n


def validate(h, blob_len: int, where: str) -> None:
    """Schema of the JSON header; every offset and size is checked against what it indexes."""
    _need(isinstance(h, dict), "must be a JSON object", where)
    for key, typ in (("inputs", list), ("outputs", list), ("tensors", dict), ("nodes", list),
                     ("weights", list), ("workspace_bytes", int), ("weight_bytes", int)):
        _need(isinstance(h.get(key), typ), f"{key!r} must be a {typ.__name__}", where)
    _need(h["weight_bytes"] >= blob_len - ALIGN, "weight_bytes must cover the blob", where)
    names = set()
    for w in h["weights"]:
        _need(isinstance(w, dict) and isinstance(w.get("name"), str) and
              w.get("dtype") in DTYPES and _is_shape(w.get("shape")) and
              isinstance(w.get("offset"), int) and isinstance(w.get("nbytes"), int),
              f"weight entry must have name, dtype in {DTYPES}, shape, offset, nbytes; got {w!r}",
              where)
        size = _nbytes("weight", w["name"], w, where)
        _need(w["nbytes"] == size and 0 <= w["offset"] and w["offset"] + size <= blob_len,
              f"weight {w['name']!r} must lie inside the {blob_len}-byte blob with nbytes = "
              f"its shape's size, got offset={w['offset']} nbytes={w['nbytes']}", where)
        names.add(w["name"])
    ws = h["workspace_bytes"]
    _need(0 <= ws <= MAX_TENSOR_BYTES, f"workspace_bytes must be in [0, {MAX_TENSOR_BYTES}] (the "
          f"largest device memory), got workspace_bytes={ws}", where)
    for name, t in h["tensors"].items():
        _need(isinstance(t, dict) and t.get("dtype") in DTYPES and _is_shape(t.get("shape")),
              f"tensor {name!r} must have dtype in {DTYPES} and a shape, got {t!r}", where)
        kind = t.get("kind")
        _need(kind in ("input", "output", "weight", "activation"),
              f"tensor {name!r} kind must be input/output/weight/activation, got {kind!r}", where)
        size = _nbytes("tensor", name, t, where)
        if kind == "activation":
            off = t.get("offset")
            _need(isinstance(off, int) and 0 <= off and off + size <= ws,
                  f"activation {name!r} must lie inside the {ws}-byte workspace, got "
                  f"offset={off!r} nbytes={size}", where)
        if kind == "weight":
            _need(name in names, f"weight tensor {name!r} must be in the weights table", where)
    for io in ("inputs", "outputs"):
        for name in h[io]:
            _need(name in h["tensors"], f"{io} entry {name!r} must be a tensor", where)
    for n in h["nodes"]:
        _need(isinstance(n, dict) and isinstance(n.get("op"), str) and
              isinstance(n.get("name"), str) and isinstance(n.get("attrs"), dict) and
              isinstance(n.get("inputs"), list) and isinstance(n.get("outputs"), list),
              f"node must have name, op, attrs, inputs, outputs; got {n!r}", where)
        for t in n["inputs"] + n["outputs"]:
            _need(t == "" or t in h["tensors"],
                  f"node {n['name']!r} refers to unknown tensor {t!r}", where)
        ws_off = n.get("workspace_offset", 0)
        _need(isinstance(ws_off, int) and 0 <= ws_off and
              ws_off + n.get("workspace_bytes", 0) <= ws,
              f"node {n['name']!r} workspace must lie inside the workspace", where)
    dyn = h.get("dynamic_batch")
    if dyn is not None:     # --dynamic_batch_size: every smaller batch's graph, checked alike
        _need(isinstance(dyn, dict) and isinstance(dyn.get("sizes"), list) and
              all(isinstance(b, int) and b >= 1 for b in dyn["sizes"]) and dyn["sizes"] and
              isinstance(dyn.get("variants"), dict) and
              sorted(dyn["variants"]) == sorted(str(b) for b in dyn["sizes"][:-1]),
              "dynamic_batch must hold sizes and one graph per size but the largest", where)
        _validate_variants(h, "dynamic_batch", blob_len, where)
    gears = h.get("dynamic_gears")
    if gears is not None:   # --dynamic_image_size / --dynamic_dims: one graph per gear
        _need(isinstance(gears, dict) and gears.get("mode") in ("image_size", "dims") and
              isinstance(gears.get("gears"), list) and isinstance(gears.get("shapes"), list) and
              len(gears["shapes"]) == len(gears["gears"]) >= 2 and
              isinstance(gears.get("input_shape"), dict) and
              isinstance(gears.get("main"), int) and 0 <= gears["main"] < len(gears["gears"]) and
              isinstance(gears.get("variants"), dict) and
              sorted(gears["variants"]) == sorted(str(i) for i in range(len(gears["gears"]))
                                                  if i != gears["main"]),
              "dynamic_gears must hold mode, gears, shapes, main and one graph per other gear",
              where)
        for g, shapes in zip(gears["gears"], gears["shapes"]):
            _need(_is_shape(g) and isinstance(shapes, dict) and
                  all(_is_shape(v) for v in shapes.values()),
                  f"dynamic_gears gear {g!r} must have a static shape per input", where)
        _validate_variants(h, "dynamic_gears", blob_len, where)
    ranges = h.get("dynamic_shape")
    if ranges is not None:  # --input_shape ranges: the ONNX graph, re-converted per shape
        ok = isinstance(ranges, dict) and isinstance(ranges.get("ranges"), dict) and \
            ranges.get("graph") in names and isinstance(ranges.get("bounded"), bool)
        _need(ok, "dynamic_shape must hold ranges, bounded and the graph's weight name", where)
        outs = ranges.get("output_dims", {})
        _need(isinstance(outs, dict) and all(
            name in h["outputs"] and isinstance(d, list) and
            len(d) == len(h["tensors"][name]["shape"]) and
            all(isinstance(x, int) and x >= -1 for x in d) for name, d in outs.items()),
              "dynamic_shape output_dims must give each listed output's dims (-1: dynamic)",
              where)
        for name, rs in ranges["ranges"].items():
            _need(name in h["inputs"] and isinstance(rs, list) and
                  len(rs) == len(h["tensors"][name]["shape"]) and
                  all(isinstance(r, list) and len(r) == 2 and all(isinstance(x, int) for x in r)
                      and r[0] >= 1 and (r[1] == -1 or r[1] >= r[0]) for r in rs),
                  f"dynamic_shape range of {name!r} must be one [lo, hi] per dim of a model "
                  f"input, got {rs!r}", where)


def _validate_variants(h, kind: str, blob_len: int, where: str) -> None:
    """Every other graph of h[kind] ("dynamic_batch" / "dynamic_gears"), checked like the main
    graph against the shared weights and workspace."""
    for key, v in h[kind]["variants"].items():
        _need(isinstance(v, dict) and kind not in v and
              isinstance(v.get("workspace_bytes"), int) and
              v["workspace_bytes"] <= h["workspace_bytes"],
              f"{kind} graph {key} must fit the workspace", where)
        validate(dict(v, weights=h["weights"], weight_bytes=h["weight_bytes"]), blob_len, where)
