"""ATC pass: the padding of windowed ops (Conv, pooling) written out as explicit `pads`, so the
executors implement one form."""
from __future__ import annotations

_WINDOW_OPS = ("Conv", "MaxPool", "AveragePool")


def resolve_auto_pad(g) -> None:
    """Conv / MaxPool / AveragePool: auto_pad SAME_UPPER / SAME_LOWER / VALID become explicit
    `pads` (ONNX's rule: output = ceil(in / stride), the total padding split evenly, the odd
    element at the end for SAME_UPPER and at the start for SAME_LOWER); MaxPool's `ceil_mode`
    becomes extra padding at the end (filled with -inf, so it never wins), as ONNX sizes the
    output: a last window must start inside the input or its leading padding. A Conv without
    `kernel_shape` gets W's spatial dims. `g`: the converter's Graph, changed
    in place."""
    for n in g.nodes:
        a = n["attrs"]
        if n["op"] == "Conv" and not a.get("kernel_shape"):     # optional: W's spatial dims
            w = g.consts.get(n["inputs"][1])
            shape = w.shape if w is not None else g.specs.get(n["inputs"][1], ((),))[0]
            if len(shape) == 4:
                a["kernel_shape"] = list(shape[2:])
        mode = a.get("auto_pad", "NOTSET")
        ceil = n["op"] == "MaxPool" and a.get("ceil_mode", 0)
        if n["op"] not in _WINDOW_OPS or (mode == "NOTSET" and not ceil):
            continue
        shape = g.specs.get(n["inputs"][0], ((),))[0]
        if len(shape) != 4:
            continue                    # other ranks: the AI CPU op applies auto_pad / ceil_mode
        k = list(a["kernel_shape"])
        strides, dil = list(a.get("strides") or [1, 1]), list(a.get("dilations") or [1, 1])
        pads = list(a.get("pads") or [0, 0, 0, 0])
        for d in range(2):
            size, span = shape[2 + d], (k[d] - 1) * dil[d] + 1
            if mode in ("SAME_UPPER", "SAME_LOWER"):
                out = -(-size // strides[d])
                total = max((out - 1) * strides[d] + span - size, 0)
                small = total // 2
                pads[d], pads[d + 2] = (small, total - small) if mode == "SAME_UPPER" \
                    else (total - small, small)
            elif mode == "VALID":
                pads[d] = pads[d + 2] = 0
            if ceil:
                room = size + pads[d] + pads[d + 2] - span
                out = -(-room // strides[d]) + 1
                if (out - 1) * strides[d] >= size + pads[d]:
                    out -= 1
                pads[d + 2] += max((out - 1) * strides[d] + span - (size + pads[d] + pads[d + 2]),
                                   0)
        a["pads"], a["auto_pad"] = pads, "NOTSET"
        a.pop("ceil_mode", None)
