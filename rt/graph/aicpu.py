"""AI CPU ops: numpy implementations of every device op the model format knows.

Every op a converted model may contain has an entry here (this table *is* the op catalogue: ATC
refuses an ONNX op that maps to nothing in it). Ops that the kernel library also implements
(`kernels.model_ops` registers AI Core versions into `rt.model.registry`) run here only when no
AI Core implementation accepts the node. ATC also uses these functions for constant folding.

Each function takes the node's attrs and its input arrays (None for an omitted optional input) and
returns a list of output arrays. Attribute names and defaults are ONNX's (opset 13-21). Conv,
MaxPool and AveragePool (any spatial rank) are in `windowed`.
"""
from __future__ import annotations

import math

import numpy as np

from . import windowed
from .format import MAX_TENSOR_BYTES

OPS: dict = {}


def op(*names):
    def deco(fn):
        for n in names:
            OPS[n] = fn
        return fn
    return deco


OPS["Conv"] = windowed.conv
OPS["MaxPool"] = windowed.max_pool
OPS["AveragePool"] = windowed.average_pool


@op("GlobalAveragePool")
def global_average_pool(attrs, x):
    return [x.mean(axis=tuple(range(2, x.ndim)), keepdims=True, dtype=np.float64).astype(x.dtype)]


@op("GlobalMaxPool")
def global_max_pool(attrs, x):
    return [x.max(axis=tuple(range(2, x.ndim)), keepdims=True)]


@op("BatchNormalization")
def batch_norm(attrs, x, scale, bias, mean, var):
    """Inference: normalise by the given statistics. `training_mode=1`: by the batch's (mean
    and population variance over every axis but 1), and the running statistics come out as
    outputs 2 and 3: `input * momentum + batch * (1 - momentum)` (ONNX's formula, opset 14-15)."""
    shape = (1, -1) + (1,) * (x.ndim - 2)
    out_stats = []
    if attrs.get("training_mode", 0):
        axes = (0,) + tuple(range(2, x.ndim))
        xf = x.astype(np.float64)
        bmean, bvar = xf.mean(axis=axes), xf.var(axis=axes)
        m = attrs.get("momentum", 0.9)
        out_stats = [(mean * m + bmean * (1 - m)).astype(mean.dtype),
                     (var * m + bvar * (1 - m)).astype(var.dtype)]
        mean, var = bmean, bvar
    inv = scale / np.sqrt(var.astype(np.float64) + attrs.get("epsilon", 1e-5))
    y = (x - mean.reshape(shape)) * inv.reshape(shape) + bias.reshape(shape)
    return [y.astype(x.dtype)] + out_stats


def _binary(fn):
    return lambda attrs, a, b: [fn(a, b).astype(np.result_type(a, b), copy=False)]


for _name, _fn in (("Add", np.add), ("Sub", np.subtract), ("Mul", np.multiply),
                   ("Pow", np.power)):
    OPS[_name] = _binary(_fn)


def _variadic(fn):
    def run(attrs, *xs):
        out = xs[0]
        for x in xs[1:]:
            out = fn(out, x)
        return [np.asarray(out).astype(np.result_type(*xs), copy=False)]
    return run


OPS["Max"] = _variadic(np.maximum)
OPS["Min"] = _variadic(np.minimum)


@op("Div")
def div(attrs, a, b):
    if np.issubdtype(a.dtype, np.integer):
        return [np.trunc(a / b).astype(a.dtype)]
    return [(a / b).astype(np.result_type(a, b), copy=False)]


def _unary(fn):
    return lambda attrs, x: [np.asarray(fn(x)).astype(x.dtype, copy=False)]


for _name, _fn in (("Relu", lambda x: np.maximum(x, 0)), ("Neg", np.negative), ("Exp", np.exp),
                   ("Log", np.log), ("Sqrt", np.sqrt), ("Abs", np.abs), ("Tanh", np.tanh),
                   ("Sigmoid", lambda x: 1 / (1 + np.exp(-x))), ("Reciprocal", np.reciprocal),
                   ("Floor", np.floor), ("Ceil", np.ceil),
                   ("Erf", np.vectorize(math.erf, otypes=[np.float64]))):
    OPS[_name] = _unary(_fn)


@op("Aipp")          # AIPP: inserted by `rt.atc --insert_op_conf`; numpy AIPP of rt.dvpp
def aipp(attrs, x):
    from ..dvpp.aipp import apply
    return [apply(attrs, x)]


@op("Identity")
def identity(attrs, x, *rest):
    return [x.copy()]


@op("Dropout")
def dropout(attrs, x, ratio=None, training_mode=None):
    """Inference (or ratio 0): output = input, mask all True. Training: mask =
    `numpy.random.RandomState(seed).uniform(0, 1, x.shape) >= ratio` (ONNX leaves the generator
    to the backend; this is the one of ONNX's reference, so a `seed` attribute reproduces its
    masks; without `seed` a fresh one per run), output = x * mask / (1 - ratio)."""
    r = 0.5 if ratio is None else float(ratio)
    if training_mode is None or not bool(training_mode) or r == 0:
        return [x.copy(), np.ones(x.shape, bool)]
    if not 0 <= r < 1:
        raise ValueError(f"Dropout: ratio must be in [0, 1), got ratio={r}")
    seed = attrs.get("seed")
    rng = np.random.RandomState(int(seed) & 0xFFFFFFFF) if seed is not None else \
        np.random.RandomState()
    mask = rng.uniform(0, 1.0, x.shape) >= r
    return [(mask * x * (1 / (1 - r))).astype(x.dtype), mask]


@op("LeakyRelu")
def leaky_relu(attrs, x):
    a = attrs.get("alpha", 0.01)
    return [np.where(x >= 0, x, x * a).astype(x.dtype)]


@op("Clip")
def clip(attrs, x, lo=None, hi=None):
    lo = attrs.get("min", -np.inf) if lo is None else lo
    hi = attrs.get("max", np.inf) if hi is None else hi
    return [np.clip(x, lo, hi).astype(x.dtype)]


@op("Gelu")
def gelu(attrs, x):
    xf = x.astype(np.float64)
    if attrs.get("approximate", "none") == "tanh":
        y = 0.5 * xf * (1 + np.tanh(math.sqrt(2 / math.pi) * (xf + 0.044715 * xf ** 3)))
    else:
        y = 0.5 * xf * (1 + np.vectorize(math.erf)(xf / math.sqrt(2)))
    return [y.astype(x.dtype)]


@op("MatMul")
def matmul(attrs, a, b):
    return [np.matmul(a, b)]


@op("Gemm")
def gemm(attrs, a, b, c=None):
    a = a.T if attrs.get("transA", 0) else a
    b = b.T if attrs.get("transB", 0) else b
    y = attrs.get("alpha", 1.0) * (a @ b)
    if c is not None:
        y = y + attrs.get("beta", 1.0) * c
    return [y.astype(a.dtype, copy=False)]


@op("Softmax")
def softmax(attrs, x):
    ax = attrs.get("axis", -1)
    xf = x.astype(np.float64)
    e = np.exp(xf - xf.max(axis=ax, keepdims=True))
    return [(e / e.sum(axis=ax, keepdims=True)).astype(x.dtype)]


@op("LogSoftmax")
def log_softmax(attrs, x):
    ax = attrs.get("axis", -1)
    xf = x.astype(np.float64)
    s = xf - xf.max(axis=ax, keepdims=True)
    return [(s - np.log(np.exp(s).sum(axis=ax, keepdims=True))).astype(x.dtype)]


@op("LayerNormalization")
def layer_norm(attrs, x, scale, bias=None):
    ax = attrs.get("axis", -1)
    ax = ax % x.ndim
    axes = tuple(range(ax, x.ndim))
    xf = x.astype(np.float64)
    mean = xf.mean(axis=axes, keepdims=True)
    var = ((xf - mean) ** 2).mean(axis=axes, keepdims=True)
    inv = 1 / np.sqrt(var + attrs.get("epsilon", 1e-5))
    y = (xf - mean) * inv * scale
    if bias is not None:
        y = y + bias
    st = np.dtype(np.float32) if attrs.get("stash_type", 1) == 1 else x.dtype
    return [y.astype(x.dtype), mean.astype(st), inv.astype(st)]     # Y, Mean, InvStdDev


@op("Reshape")
def reshape(attrs, x, shape):
    shape = [int(s) for s in shape]
    if not attrs.get("allowzero", 0):
        shape = [x.shape[i] if s == 0 else s for i, s in enumerate(shape)]
    return [x.reshape(shape).copy()]


@op("Flatten")
def flatten(attrs, x):
    ax = attrs.get("axis", 1) % max(x.ndim, 1) if x.ndim else 0
    return [x.reshape(int(np.prod(x.shape[:ax])), -1).copy()]


@op("Transpose")
def transpose(attrs, x):
    return [np.ascontiguousarray(np.transpose(x, attrs.get("perm")))]


@op("Squeeze")
def squeeze(attrs, x, axes=None):
    axes = attrs.get("axes") if axes is None else axes
    return [np.squeeze(x, axis=None if axes is None else tuple(int(a) for a in axes)).copy()]


@op("Unsqueeze")
def unsqueeze(attrs, x, axes=None):
    axes = attrs.get("axes") if axes is None else axes
    out = x
    for a in sorted(int(a) % (x.ndim + len(axes)) for a in axes):
        out = np.expand_dims(out, a)
    return [out.copy()]


@op("Concat")
def concat(attrs, *xs):
    return [np.concatenate(xs, axis=attrs["axis"])]


@op("Shape")
def shape(attrs, x):
    return [shape_of(x.shape, attrs)]


def shape_of(shape, attrs) -> np.ndarray:
    """Shape's output for a tensor of `shape` (opset 15 start/end, clamped)."""
    n = len(shape)
    s, e = attrs.get("start", 0), attrs.get("end", n)
    s, e = min(max(s + n if s < 0 else s, 0), n), min(max(e + n if e < 0 else e, 0), n)
    return np.array(shape[s:e], np.int64)


@op("Gather")
def gather(attrs, x, idx):
    return [np.take(x, idx.astype(np.int64), axis=attrs.get("axis", 0))]


@op("Cast")
def cast(attrs, x):
    from .onnx_types import numpy_dtype
    return [x.astype(numpy_dtype(attrs["to"]))]


def _reduce(fn, empty=None):
    """A Reduce op; `empty(dtype)`: its identity, the result over an empty set (ReduceMax's
    lowest value, ReduceMin's highest; numpy's sum/prod/mean have their own)."""
    def run(attrs, x, axes=None):
        axes = attrs.get("axes") if axes is None else [int(a) for a in axes]
        keep = bool(attrs.get("keepdims", 1))
        if axes is None or len(axes) == 0:
            if attrs.get("noop_with_empty_axes", 0):
                return [x.copy()]
            axes = None
        ax = None if axes is None else tuple(int(a) % max(x.ndim, 1) for a in axes)
        if empty is not None and x.size == 0:
            shape = [1 if ax is None or i in ax else n for i, n in enumerate(x.shape)]
            out = np.full(shape, empty(x.dtype), x.dtype)
            return [out if keep else out.reshape(
                [n for i, n in enumerate(x.shape) if not (ax is None or i in ax)])]
        return [np.asarray(fn(x, axis=ax, keepdims=keep)).astype(x.dtype)]
    return run


def _extreme(high):
    def value(dt):
        if dt == np.bool_:
            return high
        if np.issubdtype(dt, np.floating):
            return np.inf if high else -np.inf
        return np.iinfo(dt).max if high else np.iinfo(dt).min
    return value


OPS["ReduceMean"] = _reduce(np.mean)
OPS["ReduceSum"] = _reduce(np.sum)
OPS["ReduceMax"] = _reduce(np.max, _extreme(False))
OPS["ReduceMin"] = _reduce(np.min, _extreme(True))
OPS["ReduceProd"] = _reduce(np.prod)


OPS["Sum"] = _variadic(np.add)
OPS["Mean"] = lambda attrs, *xs: [(OPS["Sum"](attrs, *xs)[0] / len(xs)).astype(xs[0].dtype)]


@op("ConstantOfShape")
def constant_of_shape(attrs, shape):
    v = np.asarray(attrs.get("value", np.zeros(1, np.float32)))
    if v.dtype == np.float64 and not isinstance(attrs.get("value"), np.ndarray):
        v = v.astype(np.float32)           # from the JSON header: ONNX's default element type
    dims = [int(d) for d in shape]
    nbytes = math.prod(dims) * v.dtype.itemsize
    if any(d < 0 for d in dims) or nbytes > MAX_TENSOR_BYTES:   # checked before materialising
        raise ValueError(f"ConstantOfShape: shape must be non-negative and fit in "
                         f"{MAX_TENSOR_BYTES} bytes (the largest device memory), got "
                         f"shape={dims} ({nbytes} bytes)")
    return [np.full(dims, v.reshape(-1)[0] if v.size else 0, v.dtype)]


@op("LRN")
def lrn(attrs, x):
    size = attrs["size"]
    lo, hi = (size - 1) // 2, -(-(size - 1) // 2)
    sq = np.pad(x.astype(np.float64) ** 2, ((0, 0), (lo, hi)) + ((0, 0),) * (x.ndim - 2))
    s = sum(sq[:, i:i + x.shape[1]] for i in range(size))
    d = (attrs.get("bias", 1.0) + attrs.get("alpha", 1e-4) / size * s) ** attrs.get("beta", 0.75)
    return [(x / d).astype(x.dtype)]


for _name, _fn in (("Sin", np.sin), ("Cos", np.cos), ("Sign", np.sign),
                   ("Softsign", lambda x: x / (1 + np.abs(x))),
                   ("Softplus", lambda x: np.logaddexp(0, x))):
    OPS[_name] = _unary(_fn)


@op("Elu")
def elu(attrs, x):
    a = attrs.get("alpha", 1.0)
    return [np.where(x > 0, x, a * (np.exp(x) - 1)).astype(x.dtype)]


@op("Selu")
def selu(attrs, x):
    a, g = attrs.get("alpha", 1.67326319217681884765625), attrs.get("gamma",
                                                                        1.05070102214813232421875)
    return [(g * np.where(x > 0, x, a * (np.exp(x) - 1))).astype(x.dtype)]


@op("HardSigmoid")
def hard_sigmoid(attrs, x):
    y = np.clip(attrs.get("alpha", 0.2) * x + attrs.get("beta", 0.5), 0, 1)
    return [y.astype(x.dtype)]


@op("PRelu")
def prelu(attrs, x, slope):
    return [np.where(x >= 0, x, x * slope).astype(x.dtype)]


@op("Where")
def where(attrs, c, a, b):
    return [np.where(c, a, b)]


for _name, _fn in (("Equal", np.equal), ("Less", np.less), ("Greater", np.greater),
                   ("LessOrEqual", np.less_equal), ("GreaterOrEqual", np.greater_equal)):
    OPS[_name] = (lambda f: lambda attrs, a, b: [f(a, b)])(_fn)


@op("Expand")
def expand(attrs, x, shape):
    return [(x * np.ones([int(d) for d in shape], x.dtype)).astype(x.dtype)]


@op("Slice")
def slice_(attrs, x, starts, ends, axes=None, steps=None):
    axes = range(len(starts)) if axes is None else [int(a) % x.ndim for a in axes]
    steps = [1] * len(starts) if steps is None else steps
    idx = [slice(None)] * x.ndim
    for a, s, e, st in zip(axes, starts, ends, steps):
        idx[a] = slice(int(s), int(e), int(st))     # Python clamps as ONNX does
    return [x[tuple(idx)].copy()]


# node attribute written by ATC: {input index: [shape, dtype]} of the node's zero-size inputs
# (they own no device memory; the executor passes None for them)
ZERO_SIZE_INPUTS = "_zero_size_inputs"


def run(op_type: str, attrs: dict, inputs: list) -> list:
    """Run op `op_type` on numpy inputs (None for an omitted optional input, and for a zero-size
    one, which `attrs[ZERO_SIZE_INPUTS]` describes)."""
    fn = OPS[op_type]
    empty = attrs.get(ZERO_SIZE_INPUTS)
    if empty:
        inputs = list(inputs)
        for i, (shape, dt) in empty.items():
            inputs[int(i)] = np.empty(shape, dt)
        attrs = {k: v for k, v in attrs.items() if k != ZERO_SIZE_INPUTS}
    while inputs and inputs[-1] is None:
        inputs = inputs[:-1]
    return fn(attrs, *inputs)
