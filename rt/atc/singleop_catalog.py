"""The single ops served by the AI CPU (numpy references): Cast, ArgMaxV2, Slice, Transpose,
Concat, the Reduce* family, element-wise math and BatchMatMul, by their CANN op types and
attributes.

An op whose output shape depends on an input tensor's values (ArgMaxV2's dimension, Slice's
offsets and size, Transpose's perm, Reduce*'s axes, ConcatV2's concat_dim) takes those values
from the single-op JSON (``"is_const": true, "const_value": [...]``, or `acl.set_tensor_const`
at execution) when they are given; otherwise the output_desc's shape is taken as compiled and
the values are read from the input buffer when the op runs.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..graph.onnx_types import NUMPY_TO_ACL

ACL_TO_NUMPY = {v: k for k, v in NUMPY_TO_ACL.items()}


class SingleOpError(ValueError):
    """A single-op definition ATC refuses (the message says which op and field)."""


@dataclass(frozen=True)
class OpDef:
    """One op of the catalogue: input count range, output count, attributes (name -> (type,
    default)), its output inference `infer(inputs, attrs[, consts]) -> [(shape, dtype)]` (shape
    None: known only at run time) and its numpy reference `reference(attrs, *arrays)`.
    `const_inputs`: indices of inputs whose values the inference reads."""
    inputs: tuple
    outputs: int
    attrs: dict = field(default_factory=dict)
    infer: object = None
    reference: object = None
    const_inputs: tuple = ()


def _same(ins):
    return ins[0][1]


def _unary(fn):
    return OpDef((1, 1), 1, {}, lambda ins, a: [tuple(ins[0])],
                 lambda a, x: [fn(x.astype(np.float32) if x.dtype == np.float16 else x)])


def _binary(op, fn):
    def infer(ins, attrs):
        if ins[0][1] != ins[1][1]:
            raise SingleOpError(f"{op}: inputs must share one dtype, got {ins[0][1]} and "
                                f"{ins[1][1]}")
        try:
            return [(tuple(np.broadcast_shapes(ins[0][0], ins[1][0])), ins[0][1])]
        except ValueError:
            raise SingleOpError(f"{op}: input shapes must broadcast, got {list(ins[0][0])} and "
                                f"{list(ins[1][0])}") from None
    return OpDef((2, 2), 1, {}, infer, lambda a, x, y: [fn(x, y)])


def _axis(op, name, ax, rank):
    if not -rank <= ax < max(rank, 1):
        raise SingleOpError(f"{op}: {name} must be in [{-rank}, {rank}), got {name}={ax}")
    return ax % max(rank, 1)


# -- Cast -----------------------------------------------------------------------------------------
def _cast_infer(ins, attrs):
    t = attrs["dst_type"]
    if t not in ACL_TO_NUMPY:
        raise SingleOpError(f"Cast: dst_type must be one of the ACL data types "
                            f"{sorted(ACL_TO_NUMPY)}, got dst_type={t}")
    return [(tuple(ins[0][0]), ACL_TO_NUMPY[t])]


def _cast_ref(attrs, x):
    return [x.astype(ACL_TO_NUMPY[attrs["dst_type"]])]


# -- ArgMaxV2 / ArgMinV2 --------------------------------------------------------------------------
def _arg_infer(op):
    def infer(ins, attrs, consts):
        (shape, _), (dshape, ddt) = ins
        if ddt not in ("int32", "int64") or int(np.prod(dshape)) != 1:
            raise SingleOpError(f"{op}: dimension must be one int32/int64 value, got "
                                f"{ddt}{list(dshape)}")
        if attrs["dtype"] not in (3, 9):
            raise SingleOpError(f"{op}: dtype must be 3 (int32) or 9 (int64), got "
                                f"dtype={attrs['dtype']}")
        out_dt = ACL_TO_NUMPY[attrs["dtype"]]
        if consts[1] is None:
            return [(None, out_dt)]
        ax = _axis(op, "dimension", int(consts[1].reshape(-1)[0]), len(shape))
        return [(tuple(shape[:ax]) + tuple(shape[ax + 1:]), out_dt)]
    return infer


def _arg_ref(fn):
    def ref(attrs, x, dim):
        ax = int(np.asarray(dim).reshape(-1)[0])
        return [fn(x, axis=ax).astype(ACL_TO_NUMPY[attrs["dtype"]])]
    return ref


# -- Slice ----------------------------------------------------------------------------------------
def _slice_bounds(shape, offsets, size, op="Slice"):
    offsets, size = [int(v) for v in offsets], [int(v) for v in size]
    if len(offsets) != len(shape) or len(size) != len(shape):
        raise SingleOpError(f"{op}: offsets and size must have {len(shape)} values (x's rank), "
                            f"got offsets={offsets}, size={size}")
    ends = []
    for d, (o, s, n) in enumerate(zip(offsets, size, shape)):
        e = n if s == -1 else o + s
        if not 0 <= o <= e <= n or s < -1:
            raise SingleOpError(f"{op}: offsets[{d}] + size[{d}] must lie in [0, {n}], got "
                                f"offsets={offsets}, size={size}")
        ends.append(e)
    return offsets, ends


def _slice_infer(ins, attrs, consts):
    shape, dt = ins[0]
    if consts[1] is None or consts[2] is None:
        return [(None, dt)]
    o, e = _slice_bounds(shape, consts[1].reshape(-1), consts[2].reshape(-1))
    return [(tuple(b - a for a, b in zip(o, e)), dt)]


def _slice_ref(attrs, x, offsets, size):
    o, e = _slice_bounds(x.shape, np.asarray(offsets).reshape(-1), np.asarray(size).reshape(-1))
    return [x[tuple(slice(a, b) for a, b in zip(o, e))]]


def _sliced_infer(ins, attrs):
    o, e = _slice_bounds(ins[0][0], attrs["offsets"], attrs["size"], "SliceD")
    return [(tuple(b - a for a, b in zip(o, e)), ins[0][1])]


def _sliced_ref(attrs, x):
    o, e = _slice_bounds(x.shape, attrs["offsets"], attrs["size"], "SliceD")
    return [x[tuple(slice(a, b) for a, b in zip(o, e))]]


# -- Transpose ------------------------------------------------------------------------------------
def _perm(op, perm, rank):
    perm = [int(p) for p in perm]
    if sorted(perm) != list(range(rank)):
        raise SingleOpError(f"{op}: perm must be a permutation of range({rank}), got perm={perm}")
    return perm


def _transpose_infer(ins, attrs, consts):
    shape, dt = ins[0]
    if consts[1] is None:
        return [(None, dt)]
    p = _perm("Transpose", consts[1].reshape(-1), len(shape))
    return [(tuple(shape[i] for i in p), dt)]


def _transposed_infer(ins, attrs):
    shape, dt = ins[0]
    p = _perm("TransposeD", attrs["perm"], len(shape))
    return [(tuple(shape[i] for i in p), dt)]


# -- Concat ---------------------------------------------------------------------------------------
def _concat_shape(op, shapes, dim):
    rank = len(shapes[0])
    ax = _axis(op, "concat_dim", dim, rank)
    for s in shapes:
        if len(s) != rank or any(a != b for i, (a, b) in enumerate(zip(s, shapes[0]))
                                 if i != ax):
            raise SingleOpError(f"{op}: inputs must match except at concat_dim={dim}, got "
                                f"{[list(x) for x in shapes]}")
    return ax, tuple(sum(s[ax] for s in shapes) if i == ax else d
                     for i, d in enumerate(shapes[0]))


def _concatd_infer(ins, attrs):
    if len({d for _, d in ins}) != 1:
        raise SingleOpError(f"ConcatD: inputs must share one dtype, got {[d for _, d in ins]}")
    return [(_concat_shape("ConcatD", [s for s, _ in ins], attrs["concat_dim"])[1], ins[0][1])]


def _concatv2_infer(ins, attrs, consts):
    xs = ins[:-1]
    if not xs or len({d for _, d in xs}) != 1:
        raise SingleOpError(f"ConcatV2: the inputs before concat_dim must share one dtype, got "
                            f"{[d for _, d in xs]}")
    if consts[-1] is None:
        return [(None, xs[0][1])]
    dim = int(consts[-1].reshape(-1)[0])
    return [(_concat_shape("ConcatV2", [s for s, _ in xs], dim)[1], xs[0][1])]


# -- Reduce* --------------------------------------------------------------------------------------
def _reduced(op, shape, axes, keep):
    axes = sorted({_axis(op, "axes", int(a), len(shape)) for a in axes}) if len(axes) else \
        list(range(len(shape)))
    return axes, tuple((1 if i in axes else d) for i, d in enumerate(shape) if keep or
                       i not in axes)


def _reduce_defs(name, fn):
    def infer(ins, attrs, consts):
        shape, dt = ins[0]
        if consts[1] is None:
            return [(None, dt)]
        return [(_reduced(name, shape, consts[1].reshape(-1), attrs["keep_dims"])[1], dt)]

    def ref(attrs, x, axes):
        ax, _ = _reduced(name, x.shape, np.asarray(axes).reshape(-1), attrs["keep_dims"])
        return [np.asarray(fn(x, axis=tuple(ax), keepdims=attrs["keep_dims"])).astype(x.dtype)]

    def infer_d(ins, attrs):
        shape, dt = ins[0]
        return [(_reduced(name + "D", shape, attrs["axes"], attrs["keep_dims"])[1], dt)]

    def ref_d(attrs, x):
        ax, _ = _reduced(name + "D", x.shape, attrs["axes"], attrs["keep_dims"])
        return [np.asarray(fn(x, axis=tuple(ax), keepdims=attrs["keep_dims"])).astype(x.dtype)]
    keep = {"keep_dims": ("bool", False)}
    return {name: OpDef((2, 2), 1, keep, infer, ref, const_inputs=(1,)),
            name + "D": OpDef((1, 1), 1, dict(keep, axes=("list_int", [])), infer_d, ref_d)}


# -- BatchMatMul ----------------------------------------------------------------------------------
def _bmm_infer(ins, attrs):
    (a, adt), (b, bdt) = ins[:2]
    if adt != bdt or len(a) < 2 or len(b) < 2:
        raise SingleOpError(f"BatchMatMul: x1 and x2 must be >= 2-D of one dtype, got "
                            f"{adt}{list(a)} and {bdt}{list(b)}")
    m, k = (a[-1], a[-2]) if attrs["adj_x1"] else (a[-2], a[-1])
    k2, n = (b[-1], b[-2]) if attrs["adj_x2"] else (b[-2], b[-1])
    if k != k2:
        raise SingleOpError(f"BatchMatMul: the reduced dimensions must match, got x1 {list(a)} "
                            f"and x2 {list(b)}")
    try:
        batch = np.broadcast_shapes(tuple(a[:-2]), tuple(b[:-2]))
    except ValueError:
        raise SingleOpError(f"BatchMatMul: batch dims must broadcast, got {list(a)} and "
                            f"{list(b)}") from None
    return [(tuple(batch) + (m, n), adt)]


def _bmm_ref(attrs, a, b, bias=None):
    a = np.swapaxes(a, -1, -2) if attrs["adj_x1"] else a
    b = np.swapaxes(b, -1, -2) if attrs["adj_x2"] else b
    out = np.matmul(a.astype(np.float32), b.astype(np.float32))
    return [out if bias is None else out + bias.astype(np.float32)]


_BMM = {"adj_x1": ("bool", False), "adj_x2": ("bool", False)}

OPS = {
    # `truncate`: not in CANN's Cast proto, but the op lists of Ascend/samples' pyACL samples
    # carry it (TensorFlow's Cast attribute) and CANN's ATC takes them; kept, no effect
    "Cast": OpDef((1, 1), 1, {"dst_type": ("int", 0), "truncate": ("bool", False)},
                  _cast_infer, _cast_ref),
    "ArgMaxV2": OpDef((2, 2), 1, {"dtype": ("int", 3)}, _arg_infer("ArgMaxV2"),
                      _arg_ref(np.argmax), const_inputs=(1,)),
    "ArgMinV2": OpDef((2, 2), 1, {"dtype": ("int", 3)}, _arg_infer("ArgMinV2"),
                      _arg_ref(np.argmin), const_inputs=(1,)),
    "Slice": OpDef((3, 3), 1, {}, _slice_infer, _slice_ref, const_inputs=(1, 2)),
    "SliceD": OpDef((1, 1), 1, {"offsets": ("list_int", []), "size": ("list_int", [])},
                    _sliced_infer, _sliced_ref),
    "Transpose": OpDef((2, 2), 1, {}, _transpose_infer,
                       lambda a, x, p: [np.transpose(x, [int(v) for v in np.asarray(p)
                                                         .reshape(-1)])], const_inputs=(1,)),
    "TransposeD": OpDef((1, 1), 1, {"perm": ("list_int", [])}, _transposed_infer,
                        lambda a, x: [np.transpose(x, a["perm"])]),
    "ConcatD": OpDef((1, 64), 1, {"concat_dim": ("int", 0), "N": ("int", 0)}, _concatd_infer,
                     lambda a, *xs: [np.concatenate(xs, axis=a["concat_dim"])]),
    "ConcatV2": OpDef((2, 65), 1, {"N": ("int", 0)}, _concatv2_infer,
                      lambda a, *xs: [np.concatenate(xs[:-1], axis=int(np.asarray(xs[-1])
                                                                         .reshape(-1)[0]))],
                      const_inputs=(-1,)),
    "BatchMatMul": OpDef((2, 3), 1, _BMM, _bmm_infer, _bmm_ref),
    "BatchMatMulV2": OpDef((2, 3), 1, _BMM, _bmm_infer, _bmm_ref),
    **_reduce_defs("ReduceSum", np.sum), **_reduce_defs("ReduceMean", np.mean),
    **_reduce_defs("ReduceMax", np.max), **_reduce_defs("ReduceMin", np.min),
    **_reduce_defs("ReduceProd", np.prod),
    "Div": _binary("Div", lambda x, y: x / y if x.dtype.kind == "f" else x // y),
    "RealDiv": _binary("RealDiv", lambda x, y: x / y),
    "Maximum": _binary("Maximum", np.maximum), "Minimum": _binary("Minimum", np.minimum),
    "Pow": _binary("Pow", np.power),
    "Exp": _unary(np.exp), "Log": _unary(np.log), "Sqrt": _unary(np.sqrt),
    "Rsqrt": _unary(lambda x: 1 / np.sqrt(x)), "Abs": _unary(np.abs), "Neg": _unary(np.negative),
    "Square": _unary(np.square), "Reciprocal": _unary(lambda x: 1 / x),
    "Sigmoid": _unary(lambda x: 1 / (1 + np.exp(-x))), "Tanh": _unary(np.tanh),
}
