"""Load-time fusion of a Conv with the element-wise nodes that follow it, as ATC's fusion passes
do (Conv+Relu, Conv+Add+Relu): the convolution's epilogue then applies them while the result is
still on its way out, instead of one more kernel (or AI CPU task) per node.

`plan(nodes, tensors, graph_outputs)` walks the nodes in execution order and yields, per step,
either `(node, None)` or `(fused_node, originals)`. A fused node is the Conv's node dict with
`inputs` = [x, w, bias or "", residual or ""], `outputs` = [conv output, final output] and
`fusion` = {"nodes": [names], "ops": [op types], "residual": bool, "relu": bool}; the model binds
it only if an AI Core implementation accepts it, else it binds the originals unchanged.

A chain is fused only when it is safe with the static memory plan as written by ATC:
- the nodes are consecutive (nothing runs in between, so every tensor the chain reads is still
  intact when the fused node runs), and each intermediate tensor has exactly one consumer (the
  next node of the chain) and is not a graph output;
- Add / Sum have exactly two inputs of the convolution's shape and dtype (no broadcasting);
- the final output may share workspace bytes with a tensor the epilogue reads (the plan reuses
  bytes of tensors whose last use is in the chain) only if it is exactly the same range (an
  element-wise in-place update); a partial overlap would let one core overwrite input another
  core has not read yet, so such a Relu is left out of the chain (Conv+Add is still fused).
"""
from __future__ import annotations

import math

import numpy as np

ELEMENTWISE_ADD = ("Add", "Sum")


def _consumers(nodes) -> dict:
    count: dict = {}
    for n in nodes:
        for i in n["inputs"]:
            if i:
                count[i] = count.get(i, 0) + 1
    return count


def _byte_range(tensors, name):
    t = tensors[name]
    if t["kind"] != "activation":
        return None                       # its own allocation (input, output or weight)
    return t["offset"], t["offset"] + math.prod(t["shape"]) * np.dtype(t["dtype"]).itemsize


def _alias_safe(tensors, out, src) -> bool:
    """True if writing `out` element-wise while reading `src` cannot clobber unread input."""
    if out == src:
        return True
    a, b = _byte_range(tensors, out), _byte_range(tensors, src)
    if a is None or b is None:
        return True
    return a[1] <= b[0] or b[1] <= a[0] or a == b


def _sole_use(name, consumers, graph_outputs, nxt) -> bool:
    return (consumers.get(name, 0) == 1 and name not in graph_outputs and
            name in nxt["inputs"])


def _chain(nodes, i, tensors, consumers, graph_outputs):
    """The fusible chain starting at the Conv nodes[i]: (fused node, originals) or None."""
    conv = nodes[i]
    c = conv["outputs"][0]
    spec = (tensors[c]["shape"], tensors[c]["dtype"])
    chain, residual, relu = [conv], "", False
    cur = c
    j = i + 1
    if j < len(nodes) and nodes[j]["op"] in ELEMENTWISE_ADD and \
            _sole_use(cur, consumers, graph_outputs, nodes[j]):
        add = nodes[j]
        ins = add["inputs"]
        others = [k for k in ins if k != cur]
        if len(ins) == 2 and len(others) == 1 and others[0] and len(add["outputs"]) == 1 and \
                (tensors[others[0]]["shape"], tensors[others[0]]["dtype"]) == spec and \
                (tensors[add["outputs"][0]]["shape"], tensors[add["outputs"][0]]["dtype"]) == spec:
            chain.append(add)
            residual = others[0]
            cur = add["outputs"][0]
            j += 1
    reads = [c] + ([residual] if residual else [])
    if j < len(nodes) and nodes[j]["op"] == "Relu" and \
            _sole_use(cur, consumers, graph_outputs, nodes[j]) and len(nodes[j]["inputs"]) == 1 \
            and all(_alias_safe(tensors, nodes[j]["outputs"][0], r) for r in reads):
        chain.append(nodes[j])
        relu = True
        cur = nodes[j]["outputs"][0]
    # (an Add's output is always safe: the plan keeps it apart from the tensors it reads)
    if len(chain) == 1:
        return None
    ins = list(conv["inputs"]) + [""] * (3 - len(conv["inputs"]))
    fused = dict(conv, inputs=ins[:3] + [residual], outputs=[c, cur],
                 fusion={"nodes": [n["name"] for n in chain], "ops": [n["op"] for n in chain],
                         "residual": bool(residual), "relu": relu})
    return fused, chain


def plan(nodes, tensors, graph_outputs):
    """Yield (node, None) or (fused node, original nodes) in execution order (module doc)."""
    consumers = _consumers(nodes)
    outs = set(graph_outputs)
    i = 0
    while i < len(nodes):
        n = nodes[i]
        found = None
        if n["op"] == "Conv" and len(n["outputs"]) == 1:
            found = _chain(nodes, i, tensors, consumers, outs)
        if found is None:
            yield n, None
            i += 1
        else:
            yield found
            i += len(found[1])
